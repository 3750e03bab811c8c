// A random-weight Qwen3 text encoder in transformers' folder layout
// (config.json and model.safetensors), for the pipelines whose text encoder
// is Qwen3 (Z-Image's, Anima's): no real weights can be downloaded here.
//
// Not here: the weight-drawing rule (random_weights.h), the tokenizer
// (qwen_tokenizer_random.h), the model (core/models/qwen3/).
#ifndef DIFFUSIOND_TOOLS_RANDOM_MODELS_QWEN3_RANDOM_H_
#define DIFFUSIOND_TOOLS_RANDOM_MODELS_QWEN3_RANDOM_H_

#include <torch/types.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "core/models/qwen3/qwen3_config.h"

namespace diffusiond {

// Writes `dir` (created): the config as save_pretrained writes it (with
// the tying and a dtype the parser does not read) and bf16 weights drawn
// from `seed` on `device` (write_random_weights). UNAVAILABLE if it cannot
// be written.
absl::Status write_random_qwen3(const Qwen3Config& config, const std::string& dir, uint64_t seed,
                                const torch::Device& device = torch::kCPU);

}  // namespace diffusiond

#endif  // DIFFUSIOND_TOOLS_RANDOM_MODELS_QWEN3_RANDOM_H_
