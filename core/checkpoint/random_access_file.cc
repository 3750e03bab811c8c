#include "core/checkpoint/random_access_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/util/regular_file.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

class PosixFile final : public RandomAccessFile {
 public:
  PosixFile(std::string path, int fd, int64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  ~PosixFile() override { ::close(fd_); }

  const std::string& path() const override { return path_; }
  int64_t size() const override { return size_; }

  absl::Status read_at(int64_t offset, int64_t n, char* dst) const override {
    return read_fully(path_, size_, offset, n, dst, [this](char* to, int64_t count, int64_t at) {
      return static_cast<int64_t>(::pread(fd_, to, static_cast<size_t>(count), static_cast<off_t>(at)));
    });
  }

  void will_need(int64_t offset, int64_t n) const override {
    ::posix_fadvise(fd_, static_cast<off_t>(offset), static_cast<off_t>(n), POSIX_FADV_WILLNEED);
  }

 private:
  const std::string path_;
  const int fd_;
  const int64_t size_;
};

}  // namespace

absl::Status read_fully(absl::string_view path, int64_t opened_size, int64_t offset, int64_t n,
                        char* dst, PreadFn pread) {
  while (n > 0) {
    // One pread moves at most 1 GiB (Linux stops near 2 GiB anyway).
    const int64_t got = pread(dst, std::min<int64_t>(n, int64_t{1} << 30), offset);
    if (got < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(
          absl::StrCat(path, ": read at offset ", offset, ": ", std::strerror(errno)));
    }
    if (got == 0) {
      const std::string shrank =
          offset < opened_size
              ? absl::StrCat("; it held ", opened_size, " bytes when opened, so it was truncated while being read")
              : "";
      return absl::DataLossError(
          absl::StrCat(path, ": file ends at offset ", offset, ", ", n, " bytes short", shrank));
    }
    offset += got;
    dst += got;
    n -= got;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> open_random_access_file(
    absl::string_view path) {
  DIFFUSIOND_ASSIGN_OR_RETURN(RegularFile file, open_regular_file(path));
  const int64_t size = file.size_bytes();
  const int fd = file.release();
  // Checkpoints are read front to back, once.
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::unique_ptr<RandomAccessFile>(new PosixFile(std::string(path), fd, size));
}

}  // namespace diffusiond
