#include "core/util/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/util/permission_error.h"

namespace diffusiond {
namespace {

const char* describe_type(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a special file: a named pipe";
  if (S_ISSOCK(mode)) return "a special file: a socket";
  if (S_ISCHR(mode)) return "a special file: a character device";
  if (S_ISBLK(mode)) return "a special file: a block device";
  return "a special file";
}

absl::Status open_error(const std::string& path, int err) {
  const std::string message = absl::StrCat(path, ": ", std::strerror(err));
  if (err == ENOENT || err == ENOTDIR) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  if (is_permission_error(err)) return absl::PermissionDeniedError(message);
  return absl::UnavailableError(message);
}

}  // namespace

RegularFile::RegularFile(RegularFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), size_bytes_(other.size_bytes_) {}

RegularFile& RegularFile::operator=(RegularFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    size_bytes_ = other.size_bytes_;
  }
  return *this;
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

int RegularFile::release() { return std::exchange(fd_, -1); }

absl::StatusOr<RegularFile> open_regular_file(absl::string_view path) {
  const std::string p(path);
  if (p.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError("file path contains a NUL byte");
  }
  // O_NONBLOCK: opening a named pipe for reading returns at once instead of
  // waiting for a writer; the type is then checked on what was opened.
  int fd;
  do {
    fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return open_error(p, errno);
  RegularFile file(fd, 0);
  struct stat st;
  if (::fstat(fd, &st) != 0) return open_error(p, errno);
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(p, ": not a regular file (", describe_type(st.st_mode), ")"));
  }
  // Regular files never block, but reads should not see EAGAIN semantics.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) return open_error(p, errno);
  file.size_bytes_ = st.st_size;
  return file;
}

}  // namespace diffusiond
