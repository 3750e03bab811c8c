// Opening a file that must be a regular file, without ever blocking: the
// one home of the file-type check for everything that reads files named by
// users (checkpoints, shards, config and tokenizer files).
//
// A named pipe blocks open(2) until a writer comes, and a device file may
// block or never end; both are refused here before any read, and the check
// is made on the opened descriptor, so a file swapped between a check and
// the open cannot slip through.
//
// Not here: reading (core/util/file_text.h, core/checkpoint/random_access_file.h).
#ifndef DIFFUSIOND_CORE_UTIL_REGULAR_FILE_H_
#define DIFFUSIOND_CORE_UTIL_REGULAR_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

// An open, read-only file descriptor of a regular file. Move-only; closes
// the descriptor when destroyed.
class RegularFile {
 public:
  RegularFile(RegularFile&& other) noexcept;
  RegularFile& operator=(RegularFile&& other) noexcept;
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  ~RegularFile();

  int fd() const { return fd_; }
  // Size in bytes when the file was opened.
  int64_t size_bytes() const { return size_bytes_; }
  // Gives up ownership: the caller closes the returned descriptor.
  int release();

 private:
  friend absl::StatusOr<RegularFile> open_regular_file(absl::string_view path);
  RegularFile(int fd, int64_t size_bytes) : fd_(fd), size_bytes_(size_bytes) {}

  int fd_;
  int64_t size_bytes_;
};

// Opens `path` read-only (close-on-exec) without blocking, checks on the
// descriptor that it is a regular file, then restores blocking reads.
// NOT_FOUND if it does not exist, FAILED_PRECONDITION naming the path and
// what it is (a directory, a named pipe, ...) if it is not a regular file,
// PERMISSION_DENIED, or UNAVAILABLE naming errno for other errors.
absl::StatusOr<RegularFile> open_regular_file(absl::string_view path);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_UTIL_REGULAR_FILE_H_
