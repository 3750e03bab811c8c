// Config-file readers and checks that several architectures' configs share:
// the JSON object and its `_class_name`, and the three-axis RoPE split
// (axes_dims_rope) of the FLUX-style transformers.
//
// Not here: per-field readers (core/util/json_fields.h) and numeric bounds
// (core/models/config_limits.h).
#ifndef DIFFUSIOND_CORE_MODELS_COMMON_CONFIG_FIELDS_H_
#define DIFFUSIOND_CORE_MODELS_COMMON_CONFIG_FIELDS_H_

#include <array>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/util/json.h"

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

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_COMMON_CONFIG_FIELDS_H_
