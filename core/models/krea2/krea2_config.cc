#include "core/models/krea2/krea2_config.h"

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

// The pipeline packs 2x2 patches of the VAE's latent channels.
constexpr int64_t kKrea2ConfigPatchArea = 4;

constexpr char kKrea2ClassName[] = "Krea2Transformer2DModel";

// Parse order is table order, so the first bad field is the one reported.
constexpr ConfigField<Krea2Config> kKrea2Fields[] = {
    {"in_channels", &Krea2Config::in_channels},
    {"num_layers", &Krea2Config::num_layers},
    {"attention_head_dim", &Krea2Config::attention_head_dim},
    {"num_attention_heads", &Krea2Config::num_attention_heads},
    {"num_key_value_heads", &Krea2Config::num_key_value_heads},
    {"intermediate_size", &Krea2Config::intermediate_size},
    {"timestep_embed_dim", &Krea2Config::timestep_embed_dim},
    {"text_hidden_dim", &Krea2Config::text_hidden_dim},
    {"num_text_layers", &Krea2Config::num_text_layers},
    {"text_num_attention_heads", &Krea2Config::text_num_attention_heads},
    {"text_num_key_value_heads", &Krea2Config::text_num_key_value_heads},
    {"text_intermediate_size", &Krea2Config::text_intermediate_size},
    {"num_layerwise_text_blocks", &Krea2Config::num_layerwise_text_blocks},
    {"num_refiner_text_blocks", &Krea2Config::num_refiner_text_blocks},
    {"rope_theta", &Krea2Config::rope_theta},
    {"norm_eps", &Krea2Config::norm_eps},
};

absl::Status krea2_heads_divide(const char* heads_name, int64_t heads, const char* kv_name, int64_t kv) {
  if (heads % kv == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("Krea 2 config: ", heads_name, " ", heads, " is not a multiple of ",
                                                 kv_name, " ", kv, " (grouped-query attention repeats each KV head)"));
}

}  // namespace

absl::Status Krea2Config::validate() const {
  DIFFUSIOND_RETURN_IF_ERROR(
      check_int_fields("Krea 2", {{"in_channels", in_channels, 1, kMaxConfigChannels},
                                  {"num_layers", num_layers, 1, kMaxConfigLayers},
                                  {"attention_head_dim", attention_head_dim, 1, kMaxConfigHeadDim},
                                  {"num_attention_heads", num_attention_heads, 1, kMaxConfigHeads},
                                  {"num_key_value_heads", num_key_value_heads, 1, kMaxConfigHeads},
                                  {"intermediate_size", intermediate_size, 1, kMaxConfigWidth},
                                  {"timestep_embed_dim", timestep_embed_dim, 2, kMaxConfigWidth},
                                  {"text_hidden_dim", text_hidden_dim, 1, kMaxConfigWidth},
                                  {"num_text_layers", num_text_layers, 1, kMaxConfigLayers},
                                  {"text_num_attention_heads", text_num_attention_heads, 1, kMaxConfigHeads},
                                  {"text_num_key_value_heads", text_num_key_value_heads, 1, kMaxConfigHeads},
                                  {"text_intermediate_size", text_intermediate_size, 1, kMaxConfigWidth},
                                  {"num_layerwise_text_blocks", num_layerwise_text_blocks, 0, kMaxConfigLayers},
                                  {"num_refiner_text_blocks", num_refiner_text_blocks, 0, kMaxConfigLayers}}));
  DIFFUSIOND_RETURN_IF_ERROR(check_positive_real("Krea 2", "rope_theta", rope_theta));
  DIFFUSIOND_RETURN_IF_ERROR(check_positive_real("Krea 2", "norm_eps", norm_eps, /*allow_zero=*/true));
  if (hidden_size() > kMaxConfigWidth) {
    return absl::InvalidArgumentError(absl::StrCat("Krea 2 config: num_attention_heads x attention_head_dim is ",
                                                   hidden_size(), ", expected at most ", kMaxConfigWidth));
  }
  DIFFUSIOND_RETURN_IF_ERROR(
      krea2_heads_divide("num_attention_heads", num_attention_heads, "num_key_value_heads", num_key_value_heads));
  DIFFUSIOND_RETURN_IF_ERROR(krea2_heads_divide("text_num_attention_heads", text_num_attention_heads,
                                                "text_num_key_value_heads", text_num_key_value_heads));
  if (text_hidden_dim % text_num_attention_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat("Krea 2 config: text_hidden_dim ", text_hidden_dim,
                                                   " is not a multiple of text_num_attention_heads ",
                                                   text_num_attention_heads));
  }
  if (in_channels % kKrea2ConfigPatchArea != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Krea 2 config: in_channels ", in_channels, " is not a multiple of the 2x2 packing's 4"));
  }
  DIFFUSIOND_RETURN_IF_ERROR(check_axes_dims_rope("Krea 2", axes_dims_rope, attention_head_dim));
  return absl::OkStatus();
}

std::string Krea2Config::describe() const {
  return absl::StrCat(
      "Krea 2: hidden ", hidden_size(), " (", num_attention_heads, " heads x ", attention_head_dim, ", ",
      num_key_value_heads, " KV heads), ", num_layers, " blocks, SwiGLU ", intermediate_size, ", in/out channels ",
      in_channels, "; text fusion ", num_text_layers, " layers x ", text_hidden_dim, " (", text_num_attention_heads,
      "/", text_num_key_value_heads, " heads, ", num_layerwise_text_blocks, " layerwise + ", num_refiner_text_blocks,
      " refiner blocks); axes_dims_rope [", absl::StrJoin(axes_dims_rope, ", "), "], theta ", rope_theta);
}

absl::StatusOr<Krea2Config> parse_krea2_config(absl::string_view text, absl::string_view what) {
  DIFFUSIOND_ASSIGN_OR_RETURN(const nlohmann::json root, parse_json_strict(text, what));
  return krea2_config_from_json(root, what);
}

absl::StatusOr<Krea2Config> krea2_config_from_json(const nlohmann::json& root, absl::string_view what) {
  DIFFUSIOND_RETURN_IF_ERROR(check_config_class(root, what, kKrea2ClassName));
  Krea2Config c;
  DIFFUSIOND_RETURN_IF_ERROR(read_config_fields(root, what, kKrea2Fields, &c));
  // Upstream's num_key_value_heads=None means one KV head per query head.
  if (root.contains("num_key_value_heads") && root.at("num_key_value_heads").is_null()) {
    c.num_key_value_heads = c.num_attention_heads;
  }
  DIFFUSIOND_RETURN_IF_ERROR(read_axes_dims_rope(root, what, &c.axes_dims_rope));
  if (absl::Status s = c.validate(); !s.ok()) return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.message()));
  return c;
}

nlohmann::json to_json(const Krea2Config& config) {
  nlohmann::json root = {{"_class_name", kKrea2ClassName}};
  write_config_fields(config, kKrea2Fields, &root);
  root["axes_dims_rope"] = config.axes_dims_rope;
  return root;
}

ScheduleOptions krea2_default_schedule(bool is_distilled) {
  ScheduleOptions o = flow_match_euler_defaults();
  o.float64_linspace = true;  // the pipeline's np.linspace(1, 1/N, N)
  o.dynamic_shift = true;
  o.max_seq_len = 6400;
  return krea2_schedule(o, is_distilled);
}

ScheduleOptions krea2_schedule(ScheduleOptions schedule, bool is_distilled) {
  if (is_distilled) {
    schedule.mu = kKrea2DistilledMu;
  } else {
    schedule.mu.reset();
  }
  return schedule;
}

}  // namespace diffusiond
