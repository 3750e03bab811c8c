// Qwen25VlConfig: the language tower's hyper-parameters of a transformers
// Qwen2.5-VL checkpoint (Qwen2_5_VLForConditionalGeneration, Qwen-Image's
// text encoder), read from its config.json: text_config where transformers
// 4.5x writes it, else the top level as older files have it; or inferred
// from the shapes of a single file (ComfyUI's qwen_2.5_vl_7b*.safetensors).
//
// Not here: the vision tower (never read: Qwen-Image encodes text only) or
// the forward (qwen25_vl_model.h).
#ifndef DIFFUSIOND_CORE_MODELS_QWEN25_VL_QWEN25_VL_CONFIG_H_
#define DIFFUSIOND_CORE_MODELS_QWEN25_VL_QWEN25_VL_CONFIG_H_

#include <array>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/models/common/qwen_text_tower.h"

namespace diffusiond {

// Defaults are transformers' Qwen2_5_VLTextConfig defaults, used for absent
// fields.
struct Qwen25VlConfig {
  int64_t vocab_size = 152064;
  int64_t hidden_size = 8192;
  int64_t intermediate_size = 29568;
  int64_t num_hidden_layers = 80;
  int64_t num_attention_heads = 64;
  int64_t num_key_value_heads = 8;
  int64_t max_position_embeddings = 32768;
  double rope_theta = 1000000.0;
  double rms_norm_eps = 1e-6;
  // rope_scaling.mrope_section: frequencies turned by the temporal, height
  // and width rows, in chunks. Required (upstream reads it unconditionally).
  std::array<int64_t, 3> mrope_section = {0, 0, 0};

  // No head_dim field: hidden_size / num_attention_heads.
  int64_t head_dim() const { return hidden_size / num_attention_heads; }

  // The shared tower's shape: q/k/v biases, no o_proj bias, no q/k norm,
  // chunked M-RoPE, positions counting real tokens.
  QwenTowerSpec tower_spec() const;

  // Checks what the model relies on (validate_qwen_tower) and that
  // hidden_size is a multiple of num_attention_heads. INVALID_ARGUMENT
  // naming the field.
  absl::Status validate() const;
};

// Parses a transformers config.json of model_type "qwen2_5_vl"
// (architectures, if given, Qwen2_5_VLForConditionalGeneration or
// Qwen2_5_VLModel). Refuses what the port does not implement (RoPE
// scaling other than M-RoPE, sliding-window layers, activations other than
// silu) and a missing mrope_section. INVALID_ARGUMENT naming the field,
// what it holds and what was expected; `what` (the file) prefixes
// messages.
absl::StatusOr<Qwen25VlConfig> qwen25_vl_config_from_json(const nlohmann::json& root, absl::string_view what);
absl::StatusOr<Qwen25VlConfig> parse_qwen25_vl_config(absl::string_view json, absl::string_view what);

// What infer_qwen25_vl_config assumes, as every released Qwen2.5-VL has it:
// a head_dim of 128 (the config has no head_dim field and no tensor shows
// it), M-RoPE sections [16, 24, 24] (for text every section turns by the
// same position, so they cannot change a result), and the 7B's rope_theta,
// rms_norm_eps and max_position_embeddings.
inline constexpr int64_t kQwen25VlInferredHeadDim = 128;
inline constexpr char kQwen25VlInferredAssumptions[] =
    "head_dim 128, M-RoPE [16, 24, 24], rope_theta 1e6, rms_norm_eps 1e-6, 128000 positions";

// Infers the config of a single file from canonical tensor names and
// shapes (qwen_tower_parameter_table's names): vocabulary and width from
// the embedding, the MLP width from gate_proj, the layer count from the
// blocks, heads as width / 128 and KV heads as k_proj's rows / 128, the
// rest as kQwen25VlInferredAssumptions says. INVALID_ARGUMENT, prefixed
// with `what`, when a tensor it needs is missing or misshapen, or the
// widths are not multiples of 128 (name a config.json then).
absl::StatusOr<Qwen25VlConfig> infer_qwen25_vl_config(
    const std::function<std::optional<std::vector<int64_t>>(absl::string_view)>& shape_of,
    const std::vector<std::string>& names, absl::string_view what);

// Returns `config` as the config.json the parser reads, in transformers
// 4.57's layout: model_type and architectures at the top, the tower's
// fields in text_config.
nlohmann::json to_json(const Qwen25VlConfig& config);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_QWEN25_VL_QWEN25_VL_CONFIG_H_
