// Krea2Config: the hyper-parameters of diffusers' Krea2Transformer2DModel
// (Krea 2), read from a diffusers config.json, and the default schedule of
// its pipeline (Krea2Pipeline), including the distilled checkpoint's fixed
// shift.
//
// Not here: the parameter table or key names (krea2_params.h). Upstream
// has no single-file converter for Krea 2, so no config is ever inferred
// from tensor shapes.
#ifndef DIFFUSIOND_CORE_MODELS_KREA2_KREA2_CONFIG_H_
#define DIFFUSIOND_CORE_MODELS_KREA2_KREA2_CONFIG_H_

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/denoise/flow_match_schedule.h"

namespace diffusiond {

struct Krea2Config {
  // Defaults are upstream's constructor defaults (Krea 2).
  int64_t in_channels = 64;  // packed: 16 latent channels x 2x2; out_channels = in_channels
  int64_t num_layers = 28;
  int64_t attention_head_dim = 128;
  int64_t num_attention_heads = 48;
  int64_t num_key_value_heads = 12;   // grouped-query attention
  int64_t intermediate_size = 16384;  // SwiGLU width of the main blocks
  int64_t timestep_embed_dim = 256;   // sinusoid channels
  // The text fusion stage, on the text encoder's width.
  int64_t text_hidden_dim = 2560;
  int64_t num_text_layers = 12;  // tapped encoder layers stacked per token
  int64_t text_num_attention_heads = 20;
  int64_t text_num_key_value_heads = 20;
  int64_t text_intermediate_size = 6912;
  int64_t num_layerwise_text_blocks = 2;
  int64_t num_refiner_text_blocks = 2;
  std::array<int64_t, 3> axes_dims_rope = {32, 48, 48};
  double rope_theta = 1000.0;
  double norm_eps = 1e-5;  // every Krea2RMSNorm

  int64_t hidden_size() const { return num_attention_heads * attention_head_dim; }
  int64_t kv_dim() const { return num_key_value_heads * attention_head_dim; }
  int64_t text_head_dim() const { return text_hidden_dim / text_num_attention_heads; }
  int64_t text_kv_dim() const { return text_num_key_value_heads * text_head_dim(); }

  // Checks what the forward relies on: sizes within config_limits.h,
  // sum(axes_dims_rope) = attention_head_dim with even axes, query heads a
  // multiple of the KV heads (both stages), text_hidden_dim a multiple of
  // its heads, in_channels a multiple of 4 (the 2x2 packing).
  // INVALID_ARGUMENT naming the field.
  absl::Status validate() const;
  // One line for logs and `plan`.
  std::string describe() const;
};

// Parses a diffusers config.json of class Krea2Transformer2DModel; absent
// fields take upstream's defaults. INVALID_ARGUMENT naming the field, what
// it held and what was expected; `what` (the file) prefixes messages.
absl::StatusOr<Krea2Config> parse_krea2_config(absl::string_view json, absl::string_view what);
// The same over a config already parsed (Checkpoint::config()).
absl::StatusOr<Krea2Config> krea2_config_from_json(const nlohmann::json& root, absl::string_view what);
// Returns `config` as the config.json the parser reads, `_class_name`
// included.
nlohmann::json to_json(const Krea2Config& config);

// Krea2Pipeline's fixed time shift for the distilled (TDM / turbo)
// checkpoint (its is_distilled): mu = 1.15 whatever the resolution.
inline constexpr double kKrea2DistilledMu = 1.15;

// The schedule when a checkpoint has no scheduler_config.json: the
// FlowMatchEulerDiscreteScheduler config the pipeline documents
// (exponential dynamic shift, mu from 0.5 at 256 tokens to 1.15 at 6400)
// over the pipeline's float64 np.linspace. `is_distilled` fixes mu at
// kKrea2DistilledMu instead.
ScheduleOptions krea2_default_schedule(bool is_distilled = false);

// Applies the pipeline's is_distilled to a schedule read from a scheduler
// config: a fixed mu of kKrea2DistilledMu when set, the resolution's mu
// otherwise.
ScheduleOptions krea2_schedule(ScheduleOptions schedule, bool is_distilled);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_KREA2_KREA2_CONFIG_H_
