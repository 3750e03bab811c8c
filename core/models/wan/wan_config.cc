#include "core/models/wan/wan_config.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/models/common/config_fields.h"
#include "core/models/config_limits.h"
#include "core/util/bounded_text.h"
#include "core/util/json.h"
#include "core/util/json_fields.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

using json = nlohmann::json;

constexpr char kWanClassName[] = "WanTransformer3DModel";
// qk_norm's one supported value; null turns the norm off.
constexpr char kWanQkNorm[] = "rms_norm_across_heads";

// Parse order is table order, so the first bad field is the one reported.
constexpr ConfigField<WanConfig> kWanFields[] = {
    {"num_attention_heads", &WanConfig::num_attention_heads},
    {"attention_head_dim", &WanConfig::attention_head_dim},
    {"in_channels", &WanConfig::in_channels},
    {"out_channels", &WanConfig::out_channels},
    {"text_dim", &WanConfig::text_dim},
    {"freq_dim", &WanConfig::freq_dim},
    {"ffn_dim", &WanConfig::ffn_dim},
    {"num_layers", &WanConfig::num_layers},
    {"cross_attn_norm", &WanConfig::cross_attn_norm},
    {"eps", &WanConfig::eps},
    {"rope_max_seq_len", &WanConfig::rope_max_seq_len},
};

// The image-to-video / VACE fields: set, they add inputs and weights this
// port does not have, so they are refused rather than ignored.
constexpr const char* kWanImageFields[] = {"image_dim", "added_kv_proj_dim", "pos_embed_seq_len"};

absl::Status wan_read_patch(const json& root, absl::string_view what, std::array<int64_t, 3>* out) {
  if (!root.contains("patch_size")) return absl::OkStatus();
  const json& v = root.at("patch_size");
  if (!v.is_array() || v.size() != 3) return json_field_error(what, "patch_size", v, "a list of 3 integers");
  for (int i = 0; i < 3; ++i) {
    if (!v[i].is_number_integer()) return json_field_error(what, "patch_size", v, "a list of 3 integers");
    (*out)[i] = v[i].get<int64_t>();
  }
  return absl::OkStatus();
}

absl::Status wan_refuse_set(const json& root, const char* field, absl::string_view what) {
  if (root.contains(field) && !root.at(field).is_null()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", field, " is ", bounded(root.at(field).dump()),
                                                   "; only the text-to-video Wan transformer (", field,
                                                   " null) is supported"));
  }
  return absl::OkStatus();
}

}  // namespace

std::array<int64_t, 3> WanConfig::rope_axes_dims() const {
  const int64_t hw = 2 * (attention_head_dim / 6);
  return {attention_head_dim - 2 * hw, hw, hw};
}

absl::Status WanConfig::validate() const {
  // Bounds first: they size the parameter table and the RoPE tables.
  DIFFUSIOND_RETURN_IF_ERROR(check_int_fields("Wan", {{"num_attention_heads", num_attention_heads, 1, kMaxConfigHeads},
                                                      {"attention_head_dim", attention_head_dim, 6, kMaxConfigHeadDim},
                                                      {"in_channels", in_channels, 1, kMaxConfigChannels},
                                                      {"out_channels", out_channels, 1, kMaxConfigChannels},
                                                      {"text_dim", text_dim, 1, kMaxConfigWidth},
                                                      {"freq_dim", freq_dim, 2, kMaxConfigWidth},
                                                      {"ffn_dim", ffn_dim, 1, kMaxConfigWidth},
                                                      {"num_layers", num_layers, 1, kMaxConfigLayers},
                                                      {"patch_size[0]", patch_size[0], 1, kMaxConfigPatch},
                                                      {"patch_size[1]", patch_size[1], 1, kMaxConfigPatch},
                                                      {"patch_size[2]", patch_size[2], 1, kMaxConfigPatch},
                                                      {"rope_max_seq_len", rope_max_seq_len, 1, kMaxConfigPositions}}));
  DIFFUSIOND_RETURN_IF_ERROR(check_positive_real("Wan", "eps", eps));
  if (inner_dim() > kMaxConfigWidth) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Wan config: num_attention_heads * attention_head_dim = ", inner_dim(), " exceeds ", kMaxConfigWidth));
  }
  if (freq_dim % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat("Wan config: freq_dim ", freq_dim, " must be even"));
  }
  const std::array<int64_t, 3> axes = rope_axes_dims();
  if (axes[0] % 2 != 0 || axes[0] <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("Wan config: attention_head_dim ", attention_head_dim,
                                                   " leaves the time axis ", axes[0],
                                                   " RoPE channels; it must be even and positive"));
  }
  return absl::OkStatus();
}

std::string WanConfig::describe() const {
  return absl::StrCat("Wan: ", num_layers, " layers, ", num_attention_heads, " heads x ", attention_head_dim,
                      ", ffn_dim ", ffn_dim, ", text_dim ", text_dim, ", in/out channels ", in_channels, "/",
                      out_channels, ", patch ", absl::StrJoin(patch_size, "x"));
}

absl::StatusOr<WanConfig> parse_wan_config(absl::string_view text, absl::string_view what) {
  DIFFUSIOND_ASSIGN_OR_RETURN(const json root, parse_json_strict(text, what));
  return wan_config_from_json(root, what);
}

absl::StatusOr<WanConfig> wan_config_from_json(const nlohmann::json& root, absl::string_view what) {
  DIFFUSIOND_RETURN_IF_ERROR(check_config_class(root, what, kWanClassName));
  for (const char* field : kWanImageFields) DIFFUSIOND_RETURN_IF_ERROR(wan_refuse_set(root, field, what));
  WanConfig c;
  DIFFUSIOND_RETURN_IF_ERROR(wan_read_patch(root, what, &c.patch_size));
  DIFFUSIOND_RETURN_IF_ERROR(read_config_fields(root, what, kWanFields, &c));
  // Upstream's out_channels null means in_channels.
  if (root.contains("out_channels") && root.at("out_channels").is_null()) c.out_channels = c.in_channels;
  if (root.contains("qk_norm")) {
    const json& v = root.at("qk_norm");
    if (v.is_null()) {
      c.qk_norm = false;
    } else if (v != json(kWanQkNorm)) {
      return json_field_error(what, "qk_norm", v, "\"rms_norm_across_heads\" or null");
    }
  }
  if (absl::Status s = c.validate(); !s.ok()) return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.message()));
  return c;
}

nlohmann::json to_json(const WanConfig& config) {
  json root = {{"_class_name", kWanClassName}};
  for (const char* field : kWanImageFields) root[field] = nullptr;
  root["patch_size"] = config.patch_size;
  write_config_fields(config, kWanFields, &root);
  root["qk_norm"] = config.qk_norm ? json(kWanQkNorm) : json();
  return root;
}

absl::StatusOr<WanConfig> infer_wan_config(
    const std::function<std::optional<std::vector<int64_t>>(absl::string_view)>& shape_of,
    const std::vector<std::string>& names, absl::string_view what) {
  const auto need = [&](absl::string_view name, size_t rank) -> absl::StatusOr<std::vector<int64_t>> {
    std::optional<std::vector<int64_t>> shape = shape_of(name);
    if (!shape.has_value() || shape->size() != rank) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": cannot infer the Wan config: tensor '", name, "' is missing or not of rank ", rank));
    }
    return *shape;
  };
  for (const std::string& name : names) {
    if (name.rfind("condition_embedder.image_embedder.", 0) == 0 || name.find(".add_k_proj.") != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": holds image-to-video weights ('", name,
                                                     "'); only the text-to-video Wan transformer is supported"));
    }
  }
  WanConfig c;
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<int64_t> patch, need("patch_embedding.weight", 5));
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<int64_t> text,
                              need("condition_embedder.text_embedder.linear_1.weight", 2));
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<int64_t> time,
                              need("condition_embedder.time_embedder.linear_1.weight", 2));
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<int64_t> ffn, need("blocks.0.ffn.net.0.proj.weight", 2));
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<int64_t> out, need("proj_out.weight", 2));
  const int64_t inner = patch[0];
  c.in_channels = patch[1];
  c.patch_size = {patch[2], patch[3], patch[4]};
  c.text_dim = text[1];
  c.freq_dim = time[1];
  c.ffn_dim = ffn[0];
  const int64_t per_channel = c.patch_size[0] * c.patch_size[1] * c.patch_size[2];
  c.out_channels = per_channel > 0 ? out[0] / per_channel : 0;
  c.num_layers = count_indexed_blocks(names, "blocks.");
  c.attention_head_dim = 128;
  c.num_attention_heads = inner / c.attention_head_dim;
  if (c.num_attention_heads * c.attention_head_dim != inner) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": the Wan width ", inner,
                                                   " is not a multiple of the assumed head_dim 128; name a "
                                                   "config.json with num_attention_heads and attention_head_dim"));
  }
  c.qk_norm = shape_of("blocks.0.attn1.norm_q.weight").has_value();
  c.cross_attn_norm = shape_of("blocks.0.norm2.weight").has_value();
  if (absl::Status s = c.validate(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": inferred ", s.message()));
  }
  return c;
}

std::string wan_assumed_values(const WanConfig& c) {
  return absl::StrCat("attention_head_dim ", c.attention_head_dim, " (so ", c.num_attention_heads, " heads), eps ",
                      c.eps, ", rope_max_seq_len ", c.rope_max_seq_len, "; name a config.json to override");
}

ScheduleOptions wan_default_schedule() {
  ScheduleOptions o;
  o.solver = FlowSolver::kUniPc;
  o.solver_order = 2;
  o.float64_linspace = true;
  o.dynamic_shift = false;
  o.shift = 3.0;
  return o;
}

}  // namespace diffusiond
