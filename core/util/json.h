// Strict JSON parsing for untrusted files (safetensors headers, config.json,
// shard indexes): duplicate keys, excessive nesting and trailing garbage are
// errors, never silently resolved.
#ifndef DIFFUSIOND_CORE_UTIL_JSON_H_
#define DIFFUSIOND_CORE_UTIL_JSON_H_

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

// Deepest nesting accepted; real files need 3.
inline constexpr int kMaxJsonDepth = 64;

// Parses `text`. Returns INVALID_ARGUMENT, prefixed with `what` (usually the
// file name), naming the byte offset of a syntax error, the duplicated key,
// or the nesting limit.
absl::StatusOr<nlohmann::json> parse_json_strict(absl::string_view text,
                                                 absl::string_view what);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_UTIL_JSON_H_
