// WanConfig: the hyper-parameters of diffusers' WanTransformer3DModel (the
// Wan 2.1 / 2.2 text-to-video denoiser), read from a diffusers config.json or
// inferred from a single file's tensor shapes, and Wan's default schedule.
//
// Not here: the parameter names (wan_params.h) or the forward (wan_model.h).
#ifndef DIFFUSIOND_CORE_MODELS_WAN_WAN_CONFIG_H_
#define DIFFUSIOND_CORE_MODELS_WAN_WAN_CONFIG_H_

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

// Wan's RoPE base, hard-coded upstream (WanRotaryPosEmbed's theta).
inline constexpr double kWanRopeTheta = 10000.0;

struct WanConfig {
  std::array<int64_t, 3> patch_size = {1, 2, 2};  // (t, h, w)
  int64_t num_attention_heads = 40;
  int64_t attention_head_dim = 128;
  int64_t in_channels = 16;
  int64_t out_channels = 16;
  int64_t text_dim = 4096;
  int64_t freq_dim = 256;
  int64_t ffn_dim = 13824;
  int64_t num_layers = 40;
  bool cross_attn_norm = true;
  bool qk_norm = true;  // "rms_norm_across_heads"; false for null
  double eps = 1e-6;
  int64_t rope_max_seq_len = 1024;

  int64_t inner_dim() const { return num_attention_heads * attention_head_dim; }
  // Input features of one patch, ordered (c, dt, dy, dx) as Conv3d's weight.
  int64_t patch_features() const { return in_channels * patch_size[0] * patch_size[1] * patch_size[2]; }
  // proj_out's output features per token, ordered (dt, dy, dx, c).
  int64_t out_features() const { return out_channels * patch_size[0] * patch_size[1] * patch_size[2]; }
  // RoPE channels of head_dim per axis (t, h, w): h = w = 2 * (head_dim / 6),
  // t the rest, as upstream splits them.
  std::array<int64_t, 3> rope_axes_dims() const;

  // Bounds and invariants (even RoPE axes, positive sizes). INVALID_ARGUMENT
  // naming the field.
  absl::Status validate() const;
  std::string describe() const;
};

// Parses a diffusers config.json of class WanTransformer3DModel. Missing
// fields take upstream's defaults (Wan2.1-T2V-14B). The image-to-video
// fields (image_dim, added_kv_proj_dim, pos_embed_seq_len) must be null:
// INVALID_ARGUMENT otherwise, as for a wrong class or type, naming the field.
absl::StatusOr<WanConfig> parse_wan_config(absl::string_view json, absl::string_view what);
absl::StatusOr<WanConfig> wan_config_from_json(const nlohmann::json& root, absl::string_view what);
// Returns `config` as the config.json the parser reads, `_class_name`
// included, with the image-to-video fields null and qk_norm null when off.
nlohmann::json to_json(const WanConfig& config);

// Infers the config from canonical (diffusers) tensor shapes, as single-file
// loaders do: widths and patch from patch_embedding, text_dim, freq_dim,
// ffn_dim, out_channels and the layer count from their tensors, the norms
// from their presence. The head count is not in any shape: head_dim 128
// (every published Wan 2.x) is assumed. `shape_of` returns a shape or nothing.
absl::StatusOr<WanConfig> infer_wan_config(
    const std::function<std::optional<std::vector<int64_t>>(absl::string_view)>& shape_of,
    const std::vector<std::string>& names, absl::string_view what);

// What infer_wan_config() assumed, as one line for logs and ModelInfo.
std::string wan_assumed_values(const WanConfig& config);

// The schedule of the Wan-Diffusers pipelines when a checkpoint has no
// scheduler_config.json: UniPC (bh2, order 2) on flow sigmas with shift 3.0,
// as scripts/convert_wan_to_diffusers.py builds it.
ScheduleOptions wan_default_schedule();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_WAN_WAN_CONFIG_H_
