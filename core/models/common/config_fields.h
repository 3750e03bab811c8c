// Config-file readers and checks that several architectures' configs share:
// the JSON object and its `_class_name`, the three-axis RoPE split
// (axes_dims_rope) of the FLUX-style transformers, and the table of scalar
// fields that an architecture's parser and to_json() both walk.
//
// Not here: reading one field (core/util/json_fields.h) and numeric bounds
// (core/models/config_limits.h).
#ifndef DIFFUSIOND_CORE_MODELS_COMMON_CONFIG_FIELDS_H_
#define DIFFUSIOND_CORE_MODELS_COMMON_CONFIG_FIELDS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <variant>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/util/json.h"
#include "core/util/json_fields.h"

namespace diffusiond {

// Checks that `root` (read from `what`) is a JSON object whose
// `_class_name`, when present, is `class_name`. INVALID_ARGUMENT naming
// `what` and the class found otherwise.
absl::Status check_config_class(const nlohmann::json& root, absl::string_view what, absl::string_view class_name);

// Reads "axes_dims_rope", a list of 3 integers, into `*axes` when present;
// leaves it unchanged when absent. INVALID_ARGUMENT naming the field
// otherwise.
absl::Status read_axes_dims_rope(const nlohmann::json& root, absl::string_view what, std::array<int64_t, 3>* axes);

// Checks that `axes` are positive, even and sum to `head_dim`.
// INVALID_ARGUMENT prefixed "<architecture> config: " otherwise.
absl::Status check_axes_dims_rope(absl::string_view architecture, const std::array<int64_t, 3>& axes,
                                  int64_t head_dim);

// One scalar member of `Config` and the config.json key that holds it. An
// architecture lists these once, so that its parser and its to_json() name
// each field in one place; fields read with other rules (lists, enums, a
// null that means something) stay outside the table.
template <typename Config>
struct ConfigField {
  const char* name;
  std::variant<int64_t Config::*, double Config::*, bool Config::*> member;
};

// Reads every field of `fields` into `*config`, in table order, as
// read_json_field does: absent or null leaves the member unchanged. Returns
// the first field's json_field_error.
template <typename Config, size_t N>
absl::Status read_config_fields(const nlohmann::json& root, absl::string_view what,
                                const ConfigField<Config> (&fields)[N], Config* config) {
  for (const ConfigField<Config>& field : fields) {
    absl::Status s = std::visit(
        [&](auto member) { return read_json_field(root, field.name, what, &(config->*member)); }, field.member);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// Sets `(*root)[name]` to the member's value for every field of `fields`.
template <typename Config, size_t N>
void write_config_fields(const Config& config, const ConfigField<Config> (&fields)[N], nlohmann::json* root) {
  for (const ConfigField<Config>& field : fields) {
    std::visit([&](auto member) { (*root)[field.name] = config.*member; }, field.member);
  }
}

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_COMMON_CONFIG_FIELDS_H_
