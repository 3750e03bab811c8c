// FluxConfig: the hyper-parameters of diffusers' FluxTransformer2DModel
// (FLUX.1 dev and schnell), read from a diffusers config.json or inferred
// from a single file's tensor shapes.
//
// Not here: the parameter table or key names (flux_params.h).
#ifndef DIFFUSIOND_CORE_MODELS_FLUX_FLUX_CONFIG_H_
#define DIFFUSIOND_CORE_MODELS_FLUX_FLUX_CONFIG_H_

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/denoise/flow_match_schedule.h"

namespace diffusiond {

struct FluxConfig {
  // Defaults are upstream's constructor defaults (FLUX.1-dev).
  int64_t patch_size = 1;
  int64_t in_channels = 64;
  int64_t out_channels = 64;  // config null -> in_channels
  int64_t num_layers = 19;
  int64_t num_single_layers = 38;
  int64_t attention_head_dim = 128;
  int64_t num_attention_heads = 24;
  int64_t joint_attention_dim = 4096;
  int64_t pooled_projection_dim = 768;
  bool guidance_embeds = false;
  std::array<int64_t, 3> axes_dims_rope = {16, 56, 56};

  // Values a single file's shapes could not give and that were assumed
  // (field names); empty for a parsed config.json.
  std::vector<std::string> assumed;

  int64_t inner_dim() const { return num_attention_heads * attention_head_dim; }
  int64_t mlp_hidden() const { return inner_dim() * 4; }  // mlp_ratio 4.0
  int64_t out_features() const { return patch_size * patch_size * out_channels; }

  // Checks what the forward relies on: positive sizes, sum(axes_dims_rope)
  // = attention_head_dim, even axes. INVALID_ARGUMENT naming the field.
  absl::Status validate() const;
  // One line for logs and `plan`, naming any assumed values.
  std::string describe() const;
};

// Parses a diffusers config.json of class FluxTransformer2DModel; absent
// fields take upstream's defaults. INVALID_ARGUMENT naming the field, what
// it held and what was expected; `what` (the file) prefixes messages.
absl::StatusOr<FluxConfig> parse_flux_config(absl::string_view json, absl::string_view what);
// The same over a config already parsed (Checkpoint::config(), read once
// per load).
absl::StatusOr<FluxConfig> flux_config_from_json(const nlohmann::json& root, absl::string_view what);
// Returns `config` as the config.json the parser reads, `_class_name`
// included; out_channels is null when it equals in_channels, as upstream
// writes it. `assumed` is not written.
nlohmann::json to_json(const FluxConfig& config);

// Infers the config from tensor shapes by canonical (diffusers) name:
// inner dim and in_channels from x_embedder, out_channels from proj_out,
// joint and pooled dims from their embedders, layer counts from the highest
// block indices, guidance_embeds from the guidance embedder, head_dim from
// the q-norm weight. The RoPE axes split cannot be read from shapes: it is
// assumed to be FLUX.1's [16, 56, 56], and only when head_dim is 128 (and
// patch_size is assumed 1). INVALID_ARGUMENT naming a missing tensor or the
// value that cannot be inferred.
absl::StatusOr<FluxConfig> infer_flux_config(
    const std::function<std::optional<std::vector<int64_t>>(absl::string_view)>& shape_of,
    const std::vector<std::string>& names, absl::string_view what);

// The schedule when a checkpoint has no scheduler_config.json: FLUX.1-dev's
// (resolution-dependent shift, mu from 0.5 at 256 tokens to 1.15 at 4096)
// for guidance-distilled models, else FLUX.1-schnell's (static shift 1.0).
// Both use the pipeline's float64 linspace.
ScheduleOptions flux_default_schedule(const FluxConfig& config);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_FLUX_FLUX_CONFIG_H_
