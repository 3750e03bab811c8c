// Client-supplied text as it goes into a status message: never more than a
// bounded prefix. gRPC sends a status message in its trailing metadata
// (8 KiB by default); echoing a 100 kB model id whole made the client see
// RESOURCE_EXHAUSTED from its own transport instead of the real error.
#ifndef DIFFUSIOND_CORE_UTIL_BOUNDED_TEXT_H_
#define DIFFUSIOND_CORE_UTIL_BOUNDED_TEXT_H_

#include <cstddef>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

inline constexpr size_t kMaxEchoedBytes = 200;

// `text` whole when it is at most `max_bytes`, else its first `max_bytes`
// followed by "... (N bytes)".
inline std::string bounded(absl::string_view text, size_t max_bytes = kMaxEchoedBytes) {
  if (text.size() <= max_bytes) return std::string(text);
  return absl::StrCat(text.substr(0, max_bytes), "... (", text.size(), " bytes)");
}

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_UTIL_BOUNDED_TEXT_H_
