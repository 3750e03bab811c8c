// QwenImageConfig: the hyper-parameters of diffusers'
// QwenImageTransformer2DModel (Qwen-Image), read from a diffusers
// config.json or inferred from a single file's tensor shapes, and the
// default schedule of its pipeline.
//
// Not here: the parameter table or key names (qwen_image_params.h).
#ifndef DIFFUSIOND_CORE_MODELS_QWEN_IMAGE_QWEN_IMAGE_CONFIG_H_
#define DIFFUSIOND_CORE_MODELS_QWEN_IMAGE_QWEN_IMAGE_CONFIG_H_

#include <array>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/denoise/flow_match_schedule.h"

namespace diffusiond {

struct QwenImageConfig {
  // Defaults are upstream's constructor defaults (Qwen-Image).
  int64_t patch_size = 2;
  int64_t in_channels = 64;
  int64_t out_channels = 16;  // config null -> in_channels
  int64_t num_layers = 60;
  int64_t attention_head_dim = 128;
  int64_t num_attention_heads = 24;
  int64_t joint_attention_dim = 3584;
  std::array<int64_t, 3> axes_dims_rope = {16, 56, 56};
  // Upstream's zero_cond_t (Qwen-Image-Edit-2511): the image tokens of
  // reference images (img_shapes entries after the first) are modulated
  // with the t = 0 embedding; the generated image's, the text's and the
  // final layer's use t.
  bool zero_cond_t = false;

  // Values a single file's shapes could not give and that were assumed
  // (field names); empty for a parsed config.json.
  std::vector<std::string> assumed;

  int64_t inner_dim() const { return num_attention_heads * attention_head_dim; }
  int64_t mlp_hidden() const { return inner_dim() * 4; }  // FeedForward's mult 4
  int64_t out_features() const { return patch_size * patch_size * out_channels; }

  // Checks what the forward relies on: positive sizes, sum(axes_dims_rope)
  // = attention_head_dim, even axes, in_channels = patch_size² × latent
  // channels. INVALID_ARGUMENT naming the field.
  absl::Status validate() const;
  // One line for logs and `plan`, naming any assumed values.
  std::string describe() const;
};

// Parses a diffusers config.json of class QwenImageTransformer2DModel;
// absent fields take upstream's defaults. guidance_embeds (upstream's
// guidance branch cannot run), use_additional_t_cond and use_layer3d_rope
// (the layered variant's inputs) are refused when true. INVALID_ARGUMENT
// naming the field, what it held and what was expected; `what` (the file)
// prefixes messages.
absl::StatusOr<QwenImageConfig> parse_qwen_image_config(absl::string_view json, absl::string_view what);
// The same over a config already parsed (Checkpoint::config()).
absl::StatusOr<QwenImageConfig> qwen_image_config_from_json(const nlohmann::json& root, absl::string_view what);
// Returns `config` as the config.json the parser reads, `_class_name`
// included, with the refused variant flags written false. `assumed` is not
// written.
nlohmann::json to_json(const QwenImageConfig& config);

// Infers the config from tensor shapes by canonical name: inner dim and
// in_channels from img_in, joint dim from txt_in, out features from
// proj_out, the layer count from the highest block index, head_dim from the
// q-norm weight. The RoPE split and the patch size are not in the shapes:
// Qwen-Image's [16, 56, 56] and 2 are assumed, the former only when
// head_dim is 128. INVALID_ARGUMENT naming a missing tensor or the value
// that cannot be inferred.
absl::StatusOr<QwenImageConfig> infer_qwen_image_config(
    const std::function<std::optional<std::vector<int64_t>>(absl::string_view)>& shape_of,
    const std::vector<std::string>& names, absl::string_view what);

// The schedule when a checkpoint has no scheduler_config.json: Qwen-Image's
// published FlowMatchEulerDiscreteScheduler config (exponential dynamic
// shift, mu from 0.5 at 256 tokens to 0.9 at 8192, stretched to end at
// shift_terminal 0.02), over the pipeline's float64 linspace.
ScheduleOptions qwen_image_default_schedule();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_QWEN_IMAGE_QWEN_IMAGE_CONFIG_H_
