// ClipTextConfig: the hyper-parameters of a transformers CLIP text encoder
// (CLIPTextModel, or CLIPTextModelWithProjection with its text_projection),
// read from its config.json, or inferred from a single file's tensor shapes.
//
// Not here: the parameter table (clip_params.h) or the forward
// (clip_model.h).
#ifndef DIFFUSIOND_CORE_MODELS_CLIP_CLIP_CONFIG_H_
#define DIFFUSIOND_CORE_MODELS_CLIP_CLIP_CONFIG_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

// The MLP activations CLIP configs name.
enum class ClipActivation {
  kQuickGelu,  // "quick_gelu": x * sigmoid(1.702 x) (OpenAI CLIP)
  kGelu,       // "gelu": the erf form (OpenCLIP ViT-H / bigG)
  kGeluTanh,   // "gelu_new", "gelu_pytorch_tanh": the tanh approximation
};
// The config.json name transformers writes for it ("quick_gelu", "gelu",
// "gelu_pytorch_tanh").
absl::string_view clip_activation_name(ClipActivation activation);

// Defaults are transformers' CLIPTextConfig defaults, used for absent
// fields.
struct ClipTextConfig {
  int64_t vocab_size = 49408;
  int64_t hidden_size = 512;
  int64_t intermediate_size = 2048;
  int64_t projection_dim = 512;
  int64_t num_hidden_layers = 12;
  int64_t num_attention_heads = 8;
  int64_t max_position_embeddings = 77;
  ClipActivation hidden_act = ClipActivation::kQuickGelu;
  double layer_norm_eps = 1e-5;
  // Selects the pooling (see clip_model.h): 2, the legacy value FLUX.1's and
  // SD's configs carry, pools at the largest id; any other value at the
  // first occurrence of this id.
  int64_t eos_token_id = 49407;
  // CLIPTextModelWithProjection: the pooled output goes through
  // text_projection [projection_dim, hidden_size] (no bias).
  bool with_projection = false;

  int64_t head_dim() const { return hidden_size / num_attention_heads; }
  // True when pooling takes the largest id (transformers' legacy branch).
  bool pools_at_largest_id() const { return eos_token_id == 2; }

  // Checks what the model relies on: sizes in bounds, hidden_size a multiple
  // of num_attention_heads, a positive eps. INVALID_ARGUMENT naming the
  // field.
  absl::Status validate() const;
  // A one-line description for logs and `plan`.
  std::string describe() const;
};

// Parses a transformers config.json of model_type "clip_text_model"
// (architectures, if given, CLIPTextModel or CLIPTextModelWithProjection).
// Refuses what the port does not implement: another activation, or another
// position embedding type. INVALID_ARGUMENT naming the field, what it holds
// and what was expected; `what` (the file) prefixes messages.
absl::StatusOr<ClipTextConfig> parse_clip_text_config(absl::string_view json, absl::string_view what);
// The same over a config already parsed (Checkpoint::config(), read once
// per load).
absl::StatusOr<ClipTextConfig> clip_text_config_from_json(const nlohmann::json& root, absl::string_view what);
// Returns `config` as the config.json the parser reads: model_type,
// architectures (with or without the projection) and every field.
nlohmann::json to_json(const ClipTextConfig& config);

// Infers the config of a single file from canonical tensor names and
// shapes: vocabulary, width, positions, MLP width and layer count from the
// tensors; heads as width / 64 (every released CLIP text tower); the
// activation quick_gelu except at width 1280 (OpenCLIP bigG: gelu); the
// legacy eos_token_id 2; no projection. INVALID_ARGUMENT, prefixed with
// `what`, when a tensor it needs is missing or misshapen.
absl::StatusOr<ClipTextConfig> infer_clip_text_config(
    const std::function<std::optional<std::vector<int64_t>>(absl::string_view)>& shape_of,
    const std::vector<std::string>& names, absl::string_view what);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_CLIP_CLIP_CONFIG_H_
