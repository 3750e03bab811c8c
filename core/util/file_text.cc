#include "core/util/file_text.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"

namespace diffusiond {

absl::StatusOr<std::string> read_text_file(absl::string_view path,
                                           int64_t max_bytes) {
  const std::string p(path);
  // The type first, without opening: a directory would fail only at read
  // time (and read as a retryable I/O error), and opening a named pipe
  // blocks until a writer comes.
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(p, ec);
  if (!ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    return absl::FailedPreconditionError(absl::StrCat(
        p, ": not a regular file (", std::filesystem::is_directory(status) ? "a directory" : "a special file", ")"));
  }
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    const int err = errno;
    if (err == ENOENT) return absl::NotFoundError(absl::StrCat(p, ": no such file"));
    return absl::UnavailableError(absl::StrCat(p, ": ", std::strerror(err)));
  }
  std::string text;
  char buffer[4096];
  while (in.read(buffer, sizeof(buffer)) || in.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (static_cast<int64_t>(text.size()) > max_bytes) {
      return absl::FailedPreconditionError(
          absl::StrCat(p, ": larger than ", max_bytes, " bytes"));
    }
  }
  if (in.bad()) return absl::UnavailableError(absl::StrCat(p, ": read error"));
  return text;
}

}  // namespace diffusiond
