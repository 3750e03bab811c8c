#include "core/models/z_image/z_image_config.h"

#include <algorithm>
#include <type_traits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/models/common/config_fields.h"
#include "core/models/config_limits.h"
#include "core/util/bounded_text.h"
#include "core/util/json.h"
#include "core/util/json_fields.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

using json = nlohmann::json;

constexpr char kZImageClassName[] = "ZImageTransformer2DModel";
// Set, it selects the Omni model (a SigLIP image branch) this port lacks.
constexpr char kZImageOmniField[] = "siglip_feat_dim";

// Parse order is table order, so the first bad field is the one reported.
constexpr ConfigField<ZImageConfig> kZImageFields[] = {
    {"in_channels", &ZImageConfig::in_channels},
    {"dim", &ZImageConfig::dim},
    {"n_layers", &ZImageConfig::n_layers},
    {"n_refiner_layers", &ZImageConfig::n_refiner_layers},
    {"n_heads", &ZImageConfig::n_heads},
    {"norm_eps", &ZImageConfig::norm_eps},
    {"cap_feat_dim", &ZImageConfig::cap_feat_dim},
    {"rope_theta", &ZImageConfig::rope_theta},
    {"t_scale", &ZImageConfig::t_scale},
};

absl::Status read_single_int_list(const json& root, const char* field, absl::string_view what,
                                  int64_t* out) {
  if (!root.contains(field)) return absl::OkStatus();
  const json& v = root.at(field);
  if (!v.is_array() || v.size() != 1 || !v[0].is_number_integer()) {
    return json_field_error(what, field, v, "a list of one integer (one patch size is supported)");
  }
  *out = v[0].get<int64_t>();
  return absl::OkStatus();
}

absl::Status read_triple(const json& root, const char* field, absl::string_view what,
                         std::array<int64_t, 3>* out) {
  if (!root.contains(field)) return absl::OkStatus();
  const json& v = root.at(field);
  if (!v.is_array() || v.size() != 3) return json_field_error(what, field, v, "a list of 3 integers");
  for (int i = 0; i < 3; ++i) {
    if (!v[i].is_number_integer()) return json_field_error(what, field, v, "a list of 3 integers");
    (*out)[i] = v[i].get<int64_t>();
  }
  return absl::OkStatus();
}

}  // namespace

std::string ZImageConfig::patch_key() const { return absl::StrCat(patch_size, "-", f_patch_size); }

absl::Status ZImageConfig::validate() const {
  // Bounds first: every count below sizes the parameter table or the RoPE
  // position table.
  DIFFUSIOND_RETURN_IF_ERROR(check_int_fields(
      "Z-Image", {{"dim", dim, 1, kMaxConfigWidth},
                  {"n_heads", n_heads, 1, kMaxConfigHeads},
                  {"in_channels", in_channels, 1, kMaxConfigChannels},
                  {"cap_feat_dim", cap_feat_dim, 1, kMaxConfigWidth},
                  {"patch_size", patch_size, 1, kMaxConfigPatch},
                  {"f_patch_size", f_patch_size, 1, kMaxConfigPatch},
                  {"n_layers", n_layers, 1, kMaxConfigLayers},
                  {"n_refiner_layers", n_refiner_layers, 0, kMaxConfigLayers},
                  {"axes_dims[0]", axes_dims[0], 1, kMaxConfigHeadDim},
                  {"axes_dims[1]", axes_dims[1], 1, kMaxConfigHeadDim},
                  {"axes_dims[2]", axes_dims[2], 1, kMaxConfigHeadDim},
                  {"axes_lens[0]", axes_lens[0], 1, kMaxConfigPositions},
                  {"axes_lens[1]", axes_lens[1], 1, kMaxConfigPositions},
                  {"axes_lens[2]", axes_lens[2], 1, kMaxConfigPositions}}));
  DIFFUSIOND_RETURN_IF_ERROR(check_positive_real("Z-Image", "norm_eps", norm_eps));
  DIFFUSIOND_RETURN_IF_ERROR(check_positive_real("Z-Image", "rope_theta", rope_theta));
  DIFFUSIOND_RETURN_IF_ERROR(check_positive_real("Z-Image", "t_scale", t_scale));
  if (dim % n_heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Z-Image config: dim ", dim, " is not divisible by n_heads ", n_heads));
  }
  const int64_t sum = axes_dims[0] + axes_dims[1] + axes_dims[2];
  if (sum != head_dim() || axes_dims[0] % 2 || axes_dims[1] % 2 || axes_dims[2] % 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Z-Image config: axes_dims [", axes_dims[0], ", ", axes_dims[1], ", ", axes_dims[2],
        "] must be even and sum to head_dim ", head_dim()));
  }
  return absl::OkStatus();
}

absl::StatusOr<ZImageConfig> parse_z_image_config(absl::string_view text, absl::string_view what) {
  DIFFUSIOND_ASSIGN_OR_RETURN(const json root, parse_json_strict(text, what));
  return z_image_config_from_json(root, what);
}

absl::StatusOr<ZImageConfig> z_image_config_from_json(const nlohmann::json& root, absl::string_view what) {
  DIFFUSIOND_RETURN_IF_ERROR(check_config_class(root, what, kZImageClassName));
  if (root.contains(kZImageOmniField) && !root.at(kZImageOmniField).is_null()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", kZImageOmniField, " is set; the Z-Image Omni path is not supported"));
  }
  ZImageConfig c;
  DIFFUSIOND_RETURN_IF_ERROR(read_single_int_list(root, "all_patch_size", what, &c.patch_size));
  DIFFUSIOND_RETURN_IF_ERROR(read_single_int_list(root, "all_f_patch_size", what, &c.f_patch_size));
  DIFFUSIOND_RETURN_IF_ERROR(read_config_fields(root, what, kZImageFields, &c));
  DIFFUSIOND_RETURN_IF_ERROR(read_triple(root, "axes_dims", what, &c.axes_dims));
  DIFFUSIOND_RETURN_IF_ERROR(read_triple(root, "axes_lens", what, &c.axes_lens));
  // Not in the table: a null qk_norm is refused, not taken as absent.
  if (root.contains("qk_norm")) {
    if (!root.at("qk_norm").is_boolean()) return json_field_error(what, "qk_norm", root.at("qk_norm"), "a boolean");
    c.qk_norm = root.at("qk_norm").get<bool>();
  }
  if (absl::Status s = c.validate(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.message()));
  }
  return c;
}

nlohmann::json to_json(const ZImageConfig& config) {
  json root = {{"_class_name", kZImageClassName}};
  root["all_patch_size"] = {config.patch_size};
  root["all_f_patch_size"] = {config.f_patch_size};
  write_config_fields(config, kZImageFields, &root);
  root["axes_dims"] = config.axes_dims;
  root["axes_lens"] = config.axes_lens;
  root["qk_norm"] = config.qk_norm;
  // Upstream's constructor takes it; the port has no grouped-query attention.
  root["n_kv_heads"] = config.n_heads;
  root[kZImageOmniField] = nullptr;
  return root;
}

absl::StatusOr<ZImageConfig> infer_z_image_config(
    const std::function<std::optional<std::vector<int64_t>>(absl::string_view)>& shape_of,
    const std::vector<std::string>& names, absl::string_view what) {
  ZImageConfig c;
  const auto need = [&](absl::string_view name, size_t rank) -> absl::StatusOr<std::vector<int64_t>> {
    std::optional<std::vector<int64_t>> shape = shape_of(name);
    if (!shape.has_value() || shape->size() != rank) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": cannot infer the Z-Image config: tensor '", name, "' is missing or not of rank ", rank));
    }
    return *shape;
  };
  DIFFUSIOND_ASSIGN_OR_RETURN(std::vector<int64_t> x_embed, need("all_x_embedder.2-1.weight", 2));
  DIFFUSIOND_ASSIGN_OR_RETURN(std::vector<int64_t> cap, need("cap_embedder.1.weight", 2));
  c.dim = x_embed[0];
  c.in_channels = x_embed[1] / (c.patch_size * c.patch_size * c.f_patch_size);
  c.cap_feat_dim = cap[1];
  c.n_layers = count_indexed_blocks(names, "layers.");
  c.n_refiner_layers = count_indexed_blocks(names, "noise_refiner.");
  std::optional<std::vector<int64_t>> q_norm = shape_of("layers.0.attention.norm_q.weight");
  if (!q_norm.has_value()) q_norm = shape_of("noise_refiner.0.attention.norm_q.weight");
  if (q_norm.has_value() && q_norm->size() == 1 && (*q_norm)[0] > 0) {
    c.n_heads = c.dim / (*q_norm)[0];
  } else {
    c.qk_norm = false;
    c.n_heads = c.dim / 128;  // upstream's head_dim when no norm says otherwise
  }
  const int64_t hd = c.head_dim();
  c.axes_dims = {hd / 4, hd * 3 / 8, hd * 3 / 8};
  if (absl::Status s = c.validate(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": inferred ", s.message()));
  }
  return c;
}

std::string z_image_assumed_values(const ZImageConfig& c) {
  return absl::StrCat("axes_dims_rope [", absl::StrJoin(c.axes_dims, ", "), "] (upstream's 1/4, 3/8, 3/8 of head_dim), axes_lens [",
                      absl::StrJoin(c.axes_lens, ", "), "], rope_theta ", c.rope_theta, ", norm_eps ", c.norm_eps,
                      ", t_scale ", c.t_scale, ", patch size ", c.patch_size, "; name a config.json to override");
}

ScheduleOptions z_image_default_schedule() {
  ScheduleOptions o;
  o.shift = 3.0;
  return o;
}

}  // namespace diffusiond
