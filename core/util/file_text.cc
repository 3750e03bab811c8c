#include "core/util/file_text.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/util/regular_file.h"
#include "core/util/status_macros.h"

namespace diffusiond {

absl::StatusOr<std::string> read_text_file(absl::string_view path,
                                           int64_t max_bytes) {
  // The type is checked on the descriptor, opened without blocking: a
  // directory would fail only at read time (and read as a retryable I/O
  // error), and a named pipe would block the open until a writer came.
  DIFFUSIOND_ASSIGN_OR_RETURN(RegularFile file, open_regular_file(path));
  std::string text;
  char buffer[4096];
  while (true) {
    const ssize_t got = ::read(file.fd(), buffer, sizeof(buffer));
    if (got < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(absl::StrCat(path, ": read error: ", std::strerror(errno)));
    }
    if (got == 0) break;
    text.append(buffer, static_cast<size_t>(got));
    if (static_cast<int64_t>(text.size()) > max_bytes) {
      return absl::FailedPreconditionError(
          absl::StrCat(path, ": larger than ", max_bytes, " bytes"));
    }
  }
  return text;
}

absl::Status bad_file(absl::string_view path, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", problem));
}

}  // namespace diffusiond
