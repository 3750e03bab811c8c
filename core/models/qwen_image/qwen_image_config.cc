#include "core/models/qwen_image/qwen_image_config.h"

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

// Qwen-Image's RoPE split and patch, the only ones a single file can be
// assumed to use.
constexpr int64_t kQwenImageSingleFileHeadDim = 128;
constexpr std::array<int64_t, 3> kQwenImageAxes = {16, 56, 56};
constexpr int64_t kQwenImagePatch = 2;

constexpr char kQwenImageClassName[] = "QwenImageTransformer2DModel";

// Parse order is table order, so the first bad field is the one reported.
constexpr ConfigField<QwenImageConfig> kQwenImageFields[] = {
    {"patch_size", &QwenImageConfig::patch_size},
    {"in_channels", &QwenImageConfig::in_channels},
    {"out_channels", &QwenImageConfig::out_channels},
    {"num_layers", &QwenImageConfig::num_layers},
    {"attention_head_dim", &QwenImageConfig::attention_head_dim},
    {"num_attention_heads", &QwenImageConfig::num_attention_heads},
    {"joint_attention_dim", &QwenImageConfig::joint_attention_dim},
    {"zero_cond_t", &QwenImageConfig::zero_cond_t},
};

// Variants whose extra inputs or RoPE this port does not implement: refused
// when true.
constexpr const char* kQwenImageRefusedFlags[] = {"guidance_embeds", "use_additional_t_cond", "use_layer3d_rope"};

}  // namespace

absl::Status QwenImageConfig::validate() const {
  DIFFUSIOND_RETURN_IF_ERROR(
      check_int_fields("Qwen-Image", {{"patch_size", patch_size, 1, kMaxConfigPatch},
                                      {"in_channels", in_channels, 1, kMaxConfigChannels},
                                      {"out_channels", out_channels, 1, kMaxConfigChannels},
                                      {"attention_head_dim", attention_head_dim, 1, kMaxConfigHeadDim},
                                      {"num_attention_heads", num_attention_heads, 1, kMaxConfigHeads},
                                      {"joint_attention_dim", joint_attention_dim, 1, kMaxConfigWidth},
                                      {"num_layers", num_layers, 1, kMaxConfigLayers}}));
  if (inner_dim() > kMaxConfigWidth) {
    return absl::InvalidArgumentError(absl::StrCat("Qwen-Image config: num_attention_heads x attention_head_dim is ",
                                                   inner_dim(), ", expected at most ", kMaxConfigWidth));
  }
  // The predictor packs patch x patch blocks of the latent's channels.
  if (in_channels % (patch_size * patch_size) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("Qwen-Image config: in_channels ", in_channels,
                                                   " is not a multiple of patch_size² ", patch_size * patch_size));
  }
  DIFFUSIOND_RETURN_IF_ERROR(check_axes_dims_rope("Qwen-Image", axes_dims_rope, attention_head_dim));
  return absl::OkStatus();
}

std::string QwenImageConfig::describe() const {
  std::string s =
      absl::StrCat("Qwen-Image: inner ", inner_dim(), " (", num_attention_heads, " heads x ", attention_head_dim, "), ",
                   num_layers, " blocks, patch ", patch_size, ", in/out channels ", in_channels, "/", out_channels,
                   ", joint_attention_dim ", joint_attention_dim, ", axes_dims_rope [",
                   absl::StrJoin(axes_dims_rope, ", "), "], zero_cond_t ", zero_cond_t ? "yes" : "no");
  if (!assumed.empty()) absl::StrAppend(&s, "; assumed: ", absl::StrJoin(assumed, ", "));
  return s;
}

absl::StatusOr<QwenImageConfig> parse_qwen_image_config(absl::string_view text, absl::string_view what) {
  DIFFUSIOND_ASSIGN_OR_RETURN(const nlohmann::json root, parse_json_strict(text, what));
  return qwen_image_config_from_json(root, what);
}

absl::StatusOr<QwenImageConfig> qwen_image_config_from_json(const nlohmann::json& root, absl::string_view what) {
  DIFFUSIOND_RETURN_IF_ERROR(check_config_class(root, what, kQwenImageClassName));
  QwenImageConfig c;
  DIFFUSIOND_RETURN_IF_ERROR(read_config_fields(root, what, kQwenImageFields, &c));
  // Upstream: out_channels or in_channels, so null takes in_channels.
  if (root.contains("out_channels") && root.at("out_channels").is_null()) c.out_channels = c.in_channels;
  for (const char* flag : kQwenImageRefusedFlags) {
    bool set = false;
    DIFFUSIOND_RETURN_IF_ERROR(read_json_field(root, flag, what, &set));
    if (set) return absl::InvalidArgumentError(absl::StrCat(what, ": \"", flag, "\": true is not supported"));
  }
  DIFFUSIOND_RETURN_IF_ERROR(read_axes_dims_rope(root, what, &c.axes_dims_rope));
  if (absl::Status s = c.validate(); !s.ok()) return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.message()));
  return c;
}

nlohmann::json to_json(const QwenImageConfig& config) {
  nlohmann::json root = {{"_class_name", kQwenImageClassName}};
  write_config_fields(config, kQwenImageFields, &root);
  for (const char* flag : kQwenImageRefusedFlags) root[flag] = false;
  root["axes_dims_rope"] = config.axes_dims_rope;
  return root;
}

absl::StatusOr<QwenImageConfig> infer_qwen_image_config(
    const std::function<std::optional<std::vector<int64_t>>(absl::string_view)>& shape_of,
    const std::vector<std::string>& names, absl::string_view what) {
  const auto need = [&](absl::string_view name, size_t rank) -> absl::StatusOr<std::vector<int64_t>> {
    std::optional<std::vector<int64_t>> shape = shape_of(name);
    if (!shape.has_value() || shape->size() != rank) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": cannot infer the Qwen-Image config: tensor '", name,
                                                     "' is missing or not of rank ", rank));
    }
    return *shape;
  };
  QwenImageConfig c;
  DIFFUSIOND_ASSIGN_OR_RETURN(std::vector<int64_t> img_in, need("img_in.weight", 2));
  DIFFUSIOND_ASSIGN_OR_RETURN(std::vector<int64_t> txt_in, need("txt_in.weight", 2));
  DIFFUSIOND_ASSIGN_OR_RETURN(std::vector<int64_t> proj_out, need("proj_out.weight", 2));
  DIFFUSIOND_ASSIGN_OR_RETURN(std::vector<int64_t> norm, need("transformer_blocks.0.attn.norm_q.weight", 1));
  const int64_t inner = img_in[0];
  c.in_channels = img_in[1];
  c.joint_attention_dim = txt_in[1];
  c.num_layers = count_indexed_blocks(names, "transformer_blocks.");
  c.attention_head_dim = norm[0];
  c.patch_size = kQwenImagePatch;
  if (c.attention_head_dim <= 0 || inner % c.attention_head_dim != 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": cannot infer the Qwen-Image config: inner dim ", inner,
                                                   " is not a multiple of head_dim ", c.attention_head_dim));
  }
  c.num_attention_heads = inner / c.attention_head_dim;
  if (proj_out[0] % (c.patch_size * c.patch_size) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": cannot infer the Qwen-Image config: proj_out has ",
                                                   proj_out[0], " rows, not a multiple of the assumed patch 2x2"));
  }
  c.out_channels = proj_out[0] / (c.patch_size * c.patch_size);
  if (c.attention_head_dim != kQwenImageSingleFileHeadDim) {
    return absl::InvalidArgumentError(absl::StrCat(
        what,
        ": cannot infer the Qwen-Image config: axes_dims_rope is not stored in the weights and Qwen-Image's "
        "[16, 56, 56] needs head_dim ",
        kQwenImageSingleFileHeadDim, ", but the q-norm says ", c.attention_head_dim,
        "; load it as a diffusers folder with its config.json"));
  }
  c.axes_dims_rope = kQwenImageAxes;
  c.assumed = {"patch_size 2", "axes_dims_rope [16, 56, 56]"};
  if (absl::Status s = c.validate(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": inferred ", s.message()));
  }
  return c;
}

ScheduleOptions qwen_image_default_schedule() {
  ScheduleOptions o = flow_match_euler_defaults();
  o.float64_linspace = true;
  o.dynamic_shift = true;
  o.max_shift = 0.9;
  o.max_seq_len = 8192;
  o.shift_terminal = 0.02;
  return o;
}

}  // namespace diffusiond
