#include "core/models/common/config_fields.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/util/bounded_text.h"
#include "core/util/json_fields.h"

namespace diffusiond {

absl::Status check_config_class(const nlohmann::json& root, absl::string_view what, absl::string_view class_name) {
  if (!root.is_object()) return absl::InvalidArgumentError(absl::StrCat(what, ": not a JSON object"));
  if (root.contains("_class_name") && root.at("_class_name") != nlohmann::json(std::string(class_name))) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": _class_name is ", bounded(root.at("_class_name").dump()),
                                                   ", expected \"", class_name, "\""));
  }
  return absl::OkStatus();
}

absl::Status read_axes_dims_rope(const nlohmann::json& root, absl::string_view what, std::array<int64_t, 3>* axes) {
  if (!root.contains("axes_dims_rope")) return absl::OkStatus();
  const nlohmann::json& v = root.at("axes_dims_rope");
  if (!v.is_array() || v.size() != 3) return json_field_error(what, "axes_dims_rope", v, "a list of 3 integers");
  for (int i = 0; i < 3; ++i) {
    if (!v[i].is_number_integer()) return json_field_error(what, "axes_dims_rope", v, "a list of 3 integers");
    (*axes)[i] = v[i].get<int64_t>();
  }
  return absl::OkStatus();
}

absl::Status check_axes_dims_rope(absl::string_view architecture, const std::array<int64_t, 3>& axes,
                                  int64_t head_dim) {
  const int64_t sum = axes[0] + axes[1] + axes[2];
  if (sum != head_dim || axes[0] <= 0 || axes[1] <= 0 || axes[2] <= 0 || axes[0] % 2 || axes[1] % 2 || axes[2] % 2) {
    return absl::InvalidArgumentError(absl::StrCat(architecture, " config: axes_dims_rope [", absl::StrJoin(axes, ", "),
                                                   "] must be positive, even and sum to attention_head_dim ",
                                                   head_dim));
  }
  return absl::OkStatus();
}

}  // namespace diffusiond
