#include "clients/diffusionctl/token.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/util/file_text.h"

namespace diffusiond::ctl {
namespace {

// `source` names where the file came from, for messages; the token itself
// is never quoted.
absl::StatusOr<std::string> token_from_file(absl::string_view source, const std::string& path) {
  absl::StatusOr<std::string> text = read_text_file(path);
  if (!text.ok()) return absl::Status(text.status().code(), absl::StrCat(source, ": ", text.status().message()));
  const absl::string_view token = absl::StripAsciiWhitespace(*text);
  if (token.empty()) return absl::InvalidArgumentError(absl::StrCat(source, ": ", path, " holds no token"));
  for (const char c : token) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c))) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": ", path, " holds more than one word"));
    }
  }
  return std::string(token);
}

}  // namespace

absl::StatusOr<std::string> resolve_token(const GlobalOptions& options,
                                          const std::function<const char*(const char*)>& getenv) {
  if (!options.token.empty()) return options.token;
  if (!options.token_file.empty()) return token_from_file("--token_file", options.token_file);
  if (const char* token = getenv("DIFFUSIOND_TOKEN"); token != nullptr && *token != '\0') {
    return std::string(absl::StripAsciiWhitespace(token));
  }
  if (const char* path = getenv("DIFFUSIOND_TOKEN_FILE"); path != nullptr && *path != '\0') {
    return token_from_file("DIFFUSIOND_TOKEN_FILE", path);
  }
  return std::string();
}

}  // namespace diffusiond::ctl
