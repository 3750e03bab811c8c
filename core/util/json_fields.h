// Reading optional typed fields of a parsed config.json (diffusers and
// transformers configs), with one error format: "<what>: field 'f' is <value
// as JSON>, expected <type>". Bounds are the caller's (see
// core/models/config_limits.h).
#ifndef DIFFUSIOND_CORE_UTIL_JSON_FIELDS_H_
#define DIFFUSIOND_CORE_UTIL_JSON_FIELDS_H_

#include <nlohmann/json.hpp>

#include <string>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/util/bounded_text.h"

namespace diffusiond {

// INVALID_ARGUMENT: "<what>: field '<field>' is <value>, expected <expected>".
inline absl::Status json_field_error(absl::string_view what, absl::string_view field, const nlohmann::json& value,
                                     absl::string_view expected) {
  return absl::InvalidArgumentError(
      absl::StrCat(what, ": field '", field, "' is ", bounded(value.dump()), ", expected ", expected));
}

// Reads an optional field as `T`: bool, std::string, an integral type (a
// JSON integer) or a floating type (any JSON number). Absent or null leaves
// `*out` unchanged; another type is json_field_error (never an exception).
template <typename T>
absl::Status read_json_field(const nlohmann::json& root, const char* field, absl::string_view what, T* out) {
  if (!root.contains(field) || root.at(field).is_null()) return absl::OkStatus();
  const nlohmann::json& v = root.at(field);
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) return json_field_error(what, field, v, "a boolean");
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) return json_field_error(what, field, v, "a string");
  } else if constexpr (std::is_integral_v<T>) {
    if (!v.is_number_integer()) return json_field_error(what, field, v, "an integer");
  } else {
    if (!v.is_number()) return json_field_error(what, field, v, "a number");
  }
  *out = v.get<T>();
  return absl::OkStatus();
}

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_UTIL_JSON_FIELDS_H_
