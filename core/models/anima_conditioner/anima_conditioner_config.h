// AnimaConditionerConfig: the hyper-parameters of diffusers'
// AnimaTextConditioner (Anima's "LLM adapter"), read from its
// config.json (text_conditioner/) or inferred from the adapter's shapes in
// the community single file.
//
// Not here: the parameter names (anima_conditioner_params.h) or the forward
// (anima_conditioner_model.h).
#ifndef DIFFUSIOND_CORE_MODELS_ANIMA_CONDITIONER_ANIMA_CONDITIONER_CONFIG_H_
#define DIFFUSIOND_CORE_MODELS_ANIMA_CONDITIONER_ANIMA_CONDITIONER_CONFIG_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

// The defaults are upstream's __init__ defaults, which are Anima's sizes.
struct AnimaConditionerConfig {
  int64_t source_dim = 1024;   // the text encoder's width (Qwen3-0.6B)
  int64_t target_dim = 1024;   // the output width = the DiT's text_embed_dim
  int64_t model_dim = 1024;    // the blocks' width (in_proj when != target_dim)
  int64_t num_layers = 6;
  int64_t num_attention_heads = 16;
  double mlp_ratio = 4.0;
  int64_t target_vocab_size = 32128;  // T5's
  bool use_self_attention = true;
  bool use_layer_norm = false;  // LayerNorm (eps 1e-5, affine) for RMSNorm (eps 1e-6)
  // Rows the output is zero-padded to (never cut): the DiT attends to them.
  int64_t min_sequence_length = 512;

  int64_t head_dim() const { return model_dim / num_attention_heads; }
  // The MLP's inner width, int(model_dim * mlp_ratio) as upstream.
  int64_t mlp_dim() const { return static_cast<int64_t>(static_cast<double>(model_dim) * mlp_ratio); }

  // Bounds and invariants. INVALID_ARGUMENT naming the field.
  absl::Status validate() const;
  std::string describe() const;
};

// Parses a config.json of class AnimaTextConditioner. Missing fields take
// upstream's defaults (Anima's sizes). INVALID_ARGUMENT naming the field.
absl::StatusOr<AnimaConditionerConfig> parse_anima_conditioner_config(absl::string_view json, absl::string_view what);
absl::StatusOr<AnimaConditionerConfig> anima_conditioner_config_from_json(const nlohmann::json& root,
                                                                          absl::string_view what);
nlohmann::json to_json(const AnimaConditionerConfig& config);

// Infers the config from the adapter's canonical shapes, as
// scripts/convert_anima_to_diffusers.py's infer_text_conditioner_config
// does (widths, heads from the per-head q_norm, vocabulary, layers), and
// what its shapes also settle (the MLP width, whether self-attention and
// LayerNorm biases exist). min_sequence_length is in no shape: Anima's 512.
absl::StatusOr<AnimaConditionerConfig> infer_anima_conditioner_config(
    const std::function<std::optional<std::vector<int64_t>>(absl::string_view)>& shape_of,
    const std::vector<std::string>& names, absl::string_view what);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_ANIMA_CONDITIONER_ANIMA_CONDITIONER_CONFIG_H_
