// RandomAccessFile: the file I/O seam of checkpoint reading. Reads are
// positional (pread); nothing maps or slurps a whole file. Tests wrap it to
// inject I/O errors.
#ifndef DIFFUSIOND_CORE_CHECKPOINT_RANDOM_ACCESS_FILE_H_
#define DIFFUSIOND_CORE_CHECKPOINT_RANDOM_ACCESS_FILE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

// An open, read-only file. Thread-safe: reads carry their own offset.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;

  virtual const std::string& path() const = 0;
  // Size in bytes when the file was opened.
  virtual int64_t size() const = 0;
  // Reads exactly `n` bytes at `offset` into `dst`. Returns DATA_LOSS if the
  // file ends first, and UNAVAILABLE naming errno for I/O errors; messages
  // start with path().
  virtual absl::Status read_at(int64_t offset, int64_t n, char* dst) const = 0;
  // Says the `n` bytes at `offset` will be read soon: a file on storage
  // starts reading them into the page cache now (POSIX_FADV_WILLNEED), so
  // the read overlaps whatever the caller does meanwhile. Only a hint: it
  // neither fails nor blocks on the data, and the default does nothing.
  virtual void will_need(int64_t offset, int64_t n) const {}
};

// One positional read as pread(2) makes it: the bytes read, which may be
// fewer than asked without being an error, 0 at the end of the file, or -1
// with errno set.
using PreadFn = absl::FunctionRef<int64_t(char* dst, int64_t n, int64_t offset)>;

// The loop of read_at over `pread`, for implementations of RandomAccessFile:
// reads exactly `n` bytes at `offset` into `dst`, retrying short reads and
// EINTR. Returns DATA_LOSS if the file ends first (saying so when it ends
// before `opened_size`, i.e. it shrank while open) and UNAVAILABLE naming
// errno for an I/O error; both name `path` and the offset.
absl::Status read_fully(absl::string_view path, int64_t opened_size, int64_t offset, int64_t n,
                        char* dst, PreadFn pread);

// Opens `path` for positional reads, without blocking on what is not a
// regular file (core/util/regular_file.h). NOT_FOUND if it does not exist,
// FAILED_PRECONDITION naming the path if it is not a regular file (a named
// pipe, a directory), PERMISSION_DENIED or UNAVAILABLE for other errors.
absl::StatusOr<std::unique_ptr<RandomAccessFile>> open_random_access_file(
    absl::string_view path);

// How checkpoint code opens files; tests substitute fault-injecting files.
using FileOpener =
    std::function<absl::StatusOr<std::unique_ptr<RandomAccessFile>>(absl::string_view)>;

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_CHECKPOINT_RANDOM_ACCESS_FILE_H_
