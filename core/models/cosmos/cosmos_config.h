// CosmosConfig: the hyper-parameters of diffusers' CosmosTransformer3DModel
// as Anima configures it (the Cosmos-Predict2 2B text-to-image DiT), read
// from a diffusers config.json or inferred from a single file's shapes, and
// Anima's default schedule.
//
// Not here: the parameter names (cosmos_params.h), the RoPE tables
// (cosmos_rope.h) or the forward (cosmos_model.h).
#ifndef DIFFUSIOND_CORE_MODELS_COSMOS_COSMOS_CONFIG_H_
#define DIFFUSIOND_CORE_MODELS_COSMOS_COSMOS_CONFIG_H_

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

struct CosmosConfig {
  int64_t in_channels = 16;
  int64_t out_channels = 16;
  int64_t num_attention_heads = 32;
  int64_t attention_head_dim = 128;
  int64_t num_layers = 28;
  double mlp_ratio = 4.0;
  int64_t text_embed_dim = 1024;
  int64_t adaln_lora_dim = 256;
  // Upstream's RoPE table length per axis is max_size / patch (128 for
  // images): the forward extends it (cosmos_rope.h); the field is kept for
  // the config's round trip and the "extrapolating" note.
  std::array<int64_t, 3> max_size = {128, 240, 240};
  std::array<int64_t, 3> patch_size = {1, 2, 2};  // (t, h, w)
  // NTK "extrapolation ratios" per axis (t, h, w); Anima's are (1, 4, 4).
  std::array<double, 3> rope_scale = {2.0, 1.0, 1.0};
  // The padding mask joins the latents as one more input channel.
  bool concat_padding_mask = true;

  int64_t hidden_size() const { return num_attention_heads * attention_head_dim; }
  // FeedForward's inner width, int(hidden * mlp_ratio) as upstream.
  int64_t ffn_dim() const { return static_cast<int64_t>(static_cast<double>(hidden_size()) * mlp_ratio); }
  int64_t patch_volume() const { return patch_size[0] * patch_size[1] * patch_size[2]; }
  // patch_embed.proj's input features, ordered (c, pt, ph, pw): channel
  // first, the padding mask the last channel.
  int64_t patch_features() const { return (in_channels + (concat_padding_mask ? 1 : 0)) * patch_volume(); }
  // proj_out's output features, ordered (ph, pw, pt, c): channel LAST, not
  // the inverse of the input's order.
  int64_t out_features() const { return patch_volume() * out_channels; }
  // RoPE channels of head_dim per axis (t, h, w): h = w = head_dim / 6 * 2,
  // t the rest, as CosmosRotaryPosEmbed splits them.
  std::array<int64_t, 3> rope_axes_dims() const;

  // Bounds and invariants. INVALID_ARGUMENT naming the field.
  absl::Status validate() const;
  std::string describe() const;
};

// Parses a diffusers config.json of class CosmosTransformer3DModel. Missing
// fields take upstream's defaults. What Anima does not use and this port
// does not have is refused, naming the field: extra_pos_embed_type other
// than null (upstream's default is "learnable", so it must be given),
// use_crossattn_projection true, controlnet_block_every_n or
// img_context_dim_in set.
absl::StatusOr<CosmosConfig> parse_cosmos_config(absl::string_view json, absl::string_view what);
absl::StatusOr<CosmosConfig> cosmos_config_from_json(const nlohmann::json& root, absl::string_view what);
// Returns `config` as the config.json the parser reads, `_class_name` and
// the refused fields (null / false) included.
nlohmann::json to_json(const CosmosConfig& config);

// Infers the config from canonical (diffusers) tensor shapes, as
// scripts/convert_anima_to_diffusers.py sizes the Anima DiT: widths, heads
// (from the per-head norm_q), text_embed_dim, adaln_lora_dim, mlp_ratio and
// the layer count from their tensors. Not in any shape, taken from the
// Anima configuration (Cosmos-2.0-Diffusion-2B-Text2Image): patch (1, 2, 2),
// rope_scale (1, 4, 4), max_size (128, 240, 240), the padding-mask channel
// (checked against the features). `shape_of` returns a shape or nothing.
absl::StatusOr<CosmosConfig> infer_cosmos_config(
    const std::function<std::optional<std::vector<int64_t>>(absl::string_view)>& shape_of,
    const std::vector<std::string>& names, absl::string_view what);

// What infer_cosmos_config() assumed, as one line for logs and ModelInfo.
std::string cosmos_assumed_values(const CosmosConfig& config);

// Anima's schedule when a checkpoint has no scheduler_config.json:
// FlowMatchEulerDiscreteScheduler(shift=3.0), sigmas linspace(1, 1/N, N)
// in float64 (the pipeline's np.linspace), static shift.
ScheduleOptions cosmos_default_schedule();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_COSMOS_COSMOS_CONFIG_H_
