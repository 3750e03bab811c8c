#include "core/checkpoint/random_access_file.h"

#include <fcntl.h>
#include <unistd.h>

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
    while (n > 0) {
      const ssize_t got = ::pread(fd_, dst, static_cast<size_t>(std::min<int64_t>(n, 1 << 30)),
                                  static_cast<off_t>(offset));
      if (got < 0) {
        if (errno == EINTR) continue;
        return absl::UnavailableError(
            absl::StrCat(path_, ": read at offset ", offset, ": ", std::strerror(errno)));
      }
      if (got == 0) {
        return absl::DataLossError(absl::StrCat(path_, ": file ends at offset ", offset,
                                                ", ", n, " bytes short"));
      }
      offset += got;
      dst += got;
      n -= got;
    }
    return absl::OkStatus();
  }

 private:
  const std::string path_;
  const int fd_;
  const int64_t size_;
};

}  // namespace

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
