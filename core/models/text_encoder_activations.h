// The working memory of one text encode (what a TextEncoder's
// encode_activation_bytes answers), from the config alone, so a pipeline or
// a recipe's least_call_bytes can size an encode before the model loads.
// One overload per architecture, each defined beside its encode
// (<arch>/<arch>_encode.cc, which lists what is counted).
//
// Not here: the configs themselves (<arch>/<arch>_config.h; declared here
// only by name), denoisers (denoiser_activations.h).
#ifndef DIFFUSIOND_CORE_MODELS_TEXT_ENCODER_ACTIVATIONS_H_
#define DIFFUSIOND_CORE_MODELS_TEXT_ENCODER_ACTIVATIONS_H_

#include <torch/types.h>

#include <cstdint>

namespace diffusiond {

struct ClipTextConfig;
struct Qwen25VlConfig;
struct Qwen3Config;
struct Qwen3VlConfig;
struct T5Config;

// Each returns the peak bytes of encoding `tokens` tokens with a model of
// `config` at `dtype` whose largest materialised weight (FP8 decoded, or
// converted per use) has `materialized_weight_bytes`.
int64_t text_encode_activation_bytes(const ClipTextConfig& config, torch::ScalarType dtype, int64_t tokens,
                                     int64_t materialized_weight_bytes);
int64_t text_encode_activation_bytes(const Qwen25VlConfig& config, torch::ScalarType dtype, int64_t tokens,
                                     int64_t materialized_weight_bytes);
int64_t text_encode_activation_bytes(const Qwen3Config& config, torch::ScalarType dtype, int64_t tokens,
                                     int64_t materialized_weight_bytes);
int64_t text_encode_activation_bytes(const Qwen3VlConfig& config, torch::ScalarType dtype, int64_t tokens,
                                     int64_t materialized_weight_bytes);
int64_t text_encode_activation_bytes(const T5Config& config, torch::ScalarType dtype, int64_t tokens,
                                     int64_t materialized_weight_bytes);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_TEXT_ENCODER_ACTIVATIONS_H_
