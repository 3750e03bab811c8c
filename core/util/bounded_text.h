// Client-supplied text as it goes into a status message: never more than a
// bounded prefix. gRPC sends a status message in its trailing metadata
// (8 KiB by default); echoing a 100 kB model id whole made the client see
// RESOURCE_EXHAUSTED from its own transport instead of the real error.
#ifndef DIFFUSIOND_CORE_UTIL_BOUNDED_TEXT_H_
#define DIFFUSIOND_CORE_UTIL_BOUNDED_TEXT_H_

#include <cstddef>
#include <string>
#include <vector>

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

// The first `max_items` of `items`, each cut to `max_item_bytes` as
// bounded() does, joined by "; ", then "; and N more" when there were more:
// a list of a request's problems stays short however many it had (a
// Denoise with 10,000 unexpected names once answered 269 kB).
inline std::string bounded_list(const std::vector<std::string>& items, size_t max_items = 4,
                                size_t max_item_bytes = kMaxEchoedBytes) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < max_items; ++i) {
    absl::StrAppend(&out, i == 0 ? "" : "; ", bounded(items[i], max_item_bytes));
  }
  if (items.size() > max_items) absl::StrAppend(&out, "; and ", items.size() - max_items, " more");
  return out;
}

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_UTIL_BOUNDED_TEXT_H_
