#include "core/models/flux/flux_config.h"

#include <algorithm>
#include <type_traits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "core/models/common/config_fields.h"
#include "core/models/config_limits.h"
#include "core/util/bounded_text.h"
#include "core/util/json.h"
#include "core/util/json_fields.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

using json = nlohmann::json;

// FLUX.1's RoPE split, the only one a single file can be assumed to use.
constexpr int64_t kFlux1HeadDim = 128;
constexpr std::array<int64_t, 3> kFlux1Axes = {16, 56, 56};

constexpr char kFluxClassName[] = "FluxTransformer2DModel";

// Parse order is table order, so the first bad field is the one reported.
constexpr ConfigField<FluxConfig> kFluxFields[] = {
    {"patch_size", &FluxConfig::patch_size},
    {"in_channels", &FluxConfig::in_channels},
    {"out_channels", &FluxConfig::out_channels},
    {"num_layers", &FluxConfig::num_layers},
    {"num_single_layers", &FluxConfig::num_single_layers},
    {"attention_head_dim", &FluxConfig::attention_head_dim},
    {"num_attention_heads", &FluxConfig::num_attention_heads},
    {"joint_attention_dim", &FluxConfig::joint_attention_dim},
    {"pooled_projection_dim", &FluxConfig::pooled_projection_dim},
};

}  // namespace

absl::Status FluxConfig::validate() const {
  if (num_layers < 0 || num_single_layers < 0) {
    return absl::InvalidArgumentError(absl::StrCat("FLUX config: num_layers ", num_layers,
                                                   " and num_single_layers ", num_single_layers,
                                                   " must not be negative"));
  }
  // Bounds next: the counts size the parameter table.
  DIFFUSIOND_RETURN_IF_ERROR(check_int_fields(
      "FLUX", {{"patch_size", patch_size, 1, kMaxConfigPatch},
               {"in_channels", in_channels, 1, kMaxConfigChannels},
               {"out_channels", out_channels, 1, kMaxConfigChannels},
               {"attention_head_dim", attention_head_dim, 1, kMaxConfigHeadDim},
               {"num_attention_heads", num_attention_heads, 1, kMaxConfigHeads},
               {"joint_attention_dim", joint_attention_dim, 1, kMaxConfigWidth},
               {"pooled_projection_dim", pooled_projection_dim, 1, kMaxConfigWidth},
               {"num_layers", num_layers, 0, kMaxConfigLayers},
               {"num_single_layers", num_single_layers, 0, kMaxConfigLayers}}));
  if (num_layers + num_single_layers == 0) {
    return absl::InvalidArgumentError(
        "FLUX config: num_layers and num_single_layers are both 0, expected at least one block");
  }
  if (inner_dim() > kMaxConfigWidth) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FLUX config: num_attention_heads x attention_head_dim is ", inner_dim(), ", expected at most ",
        kMaxConfigWidth));
  }
  DIFFUSIOND_RETURN_IF_ERROR(check_axes_dims_rope("FLUX", axes_dims_rope, attention_head_dim));
  return absl::OkStatus();
}

std::string FluxConfig::describe() const {
  std::string s = absl::StrCat(
      "FLUX: inner ", inner_dim(), " (", num_attention_heads, " heads x ", attention_head_dim, "), ",
      num_layers, " double + ", num_single_layers, " single blocks, in/out channels ", in_channels,
      "/", out_channels, ", joint_attention_dim ", joint_attention_dim, ", pooled_projection_dim ",
      pooled_projection_dim, ", guidance ", guidance_embeds ? "yes" : "no", ", axes_dims_rope [",
      absl::StrJoin(axes_dims_rope, ", "), "]");
  if (!assumed.empty()) absl::StrAppend(&s, "; assumed: ", absl::StrJoin(assumed, ", "));
  return s;
}

absl::StatusOr<FluxConfig> parse_flux_config(absl::string_view text, absl::string_view what) {
  DIFFUSIOND_ASSIGN_OR_RETURN(const json root, parse_json_strict(text, what));
  return flux_config_from_json(root, what);
}

absl::StatusOr<FluxConfig> flux_config_from_json(const nlohmann::json& root, absl::string_view what) {
  DIFFUSIOND_RETURN_IF_ERROR(check_config_class(root, what, kFluxClassName));
  FluxConfig c;
  DIFFUSIOND_RETURN_IF_ERROR(read_config_fields(root, what, kFluxFields, &c));
  // Upstream: out_channels or in_channels, so absent or null takes in_channels.
  if (root.value("out_channels", json()).is_null()) c.out_channels = c.in_channels;
  // Not in the table: a null guidance_embeds is refused, not taken as absent.
  if (root.contains("guidance_embeds")) {
    const json& v = root.at("guidance_embeds");
    if (!v.is_boolean()) return json_field_error(what, "guidance_embeds", v, "a boolean");
    c.guidance_embeds = v.get<bool>();
  }
  DIFFUSIOND_RETURN_IF_ERROR(read_axes_dims_rope(root, what, &c.axes_dims_rope));
  if (absl::Status s = c.validate(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.message()));
  }
  return c;
}

nlohmann::json to_json(const FluxConfig& config) {
  json root = {{"_class_name", kFluxClassName}};
  write_config_fields(config, kFluxFields, &root);
  if (config.out_channels == config.in_channels) root["out_channels"] = nullptr;
  root["guidance_embeds"] = config.guidance_embeds;
  root["axes_dims_rope"] = config.axes_dims_rope;
  return root;
}

absl::StatusOr<FluxConfig> infer_flux_config(
    const std::function<std::optional<std::vector<int64_t>>(absl::string_view)>& shape_of,
    const std::vector<std::string>& names, absl::string_view what) {
  const auto need = [&](absl::string_view name, size_t rank) -> absl::StatusOr<std::vector<int64_t>> {
    std::optional<std::vector<int64_t>> shape = shape_of(name);
    if (!shape.has_value() || shape->size() != rank) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": cannot infer the FLUX config: tensor '",
                                                     name, "' is missing or not of rank ", rank));
    }
    return *shape;
  };
  FluxConfig c;
  DIFFUSIOND_ASSIGN_OR_RETURN(std::vector<int64_t> x_embed, need("x_embedder.weight", 2));
  DIFFUSIOND_ASSIGN_OR_RETURN(std::vector<int64_t> context, need("context_embedder.weight", 2));
  DIFFUSIOND_ASSIGN_OR_RETURN(std::vector<int64_t> pooled,
                              need("time_text_embed.text_embedder.linear_1.weight", 2));
  DIFFUSIOND_ASSIGN_OR_RETURN(std::vector<int64_t> proj_out, need("proj_out.weight", 2));
  const int64_t inner = x_embed[0];
  c.in_channels = x_embed[1];
  c.patch_size = 1;
  c.out_channels = proj_out[0];
  c.joint_attention_dim = context[1];
  c.pooled_projection_dim = pooled[1];
  c.num_layers = count_indexed_blocks(names, "transformer_blocks.");
  c.num_single_layers = count_indexed_blocks(names, "single_transformer_blocks.");
  c.guidance_embeds = shape_of("time_text_embed.guidance_embedder.linear_1.weight").has_value();
  // The q-norm weight has head_dim entries (BFL: query_norm.scale).
  const std::string q_norm = c.num_layers > 0 ? "transformer_blocks.0.attn.norm_q.weight"
                                              : "single_transformer_blocks.0.attn.norm_q.weight";
  DIFFUSIOND_ASSIGN_OR_RETURN(std::vector<int64_t> norm, need(q_norm, 1));
  c.attention_head_dim = norm[0];
  if (c.attention_head_dim <= 0 || inner % c.attention_head_dim != 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": cannot infer the FLUX config: inner dim ",
                                                   inner, " is not a multiple of head_dim ",
                                                   c.attention_head_dim, " (from '", q_norm, "')"));
  }
  c.num_attention_heads = inner / c.attention_head_dim;
  if (c.attention_head_dim != kFlux1HeadDim) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": cannot infer the FLUX config: axes_dims_rope is not stored in the weights and "
        "FLUX.1's [16, 56, 56] needs head_dim ", kFlux1HeadDim, ", but the q-norm says ",
        c.attention_head_dim, "; load it as a diffusers folder with its config.json"));
  }
  c.axes_dims_rope = kFlux1Axes;
  c.assumed = {"patch_size 1", "axes_dims_rope [16, 56, 56]"};
  if (absl::Status s = c.validate(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": inferred ", s.message()));
  }
  return c;
}

ScheduleOptions flux_default_schedule(const FluxConfig& config) {
  ScheduleOptions o;
  o.float64_linspace = true;
  o.dynamic_shift = config.guidance_embeds;
  o.shift = 1.0;
  o.base_shift = 0.5;
  o.max_shift = 1.15;
  o.base_seq_len = 256;
  o.max_seq_len = 4096;
  return o;
}

}  // namespace diffusiond
