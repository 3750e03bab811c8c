#include "core/util/file_text.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"

namespace diffusiond {

absl::StatusOr<std::string> read_text_file(absl::string_view path,
                                           int64_t max_bytes) {
  const std::string p(path);
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
