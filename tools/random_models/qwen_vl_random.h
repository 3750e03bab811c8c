// Random-weight Qwen-VL text encoders in transformers' folder layout
// (config.json and model.safetensors, bf16): Qwen2.5-VL as
// Qwen2_5_VLForConditionalGeneration saves it ("model.layers.<i>...",
// Qwen-Image's text_encoder/) and Qwen3-VL as Qwen3VLModel saves it
// ("language_model.layers.<i>...", Krea 2's). Only the language tower is
// written: a real checkpoint's vision tower and LM head are what the
// loader skips unread.
//
// Not here: the tokenizer (qwen_tokenizer_random.h), the weight-drawing
// rule (random_weights.h), the models (core/models/qwen25_vl/, qwen3_vl/).
#ifndef DIFFUSIOND_TOOLS_RANDOM_MODELS_QWEN_VL_RANDOM_H_
#define DIFFUSIOND_TOOLS_RANDOM_MODELS_QWEN_VL_RANDOM_H_

#include <torch/types.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "core/models/qwen25_vl/qwen25_vl_config.h"
#include "core/models/qwen3_vl/qwen3_vl_config.h"

namespace diffusiond {

// The benchmarks' mid-size towers: the released models' widths, vocabulary
// and RoPE with a few of their layers, about 3 GB of bf16 each. Qwen-Image's
// Qwen2.5-VL-7B (docs/configs/qwen-image-text-encoder.json: 3584 wide, 28
// heads over 4 KV heads, MLP 18944) with 4 of its 28 layers; Krea 2's
// Qwen3-VL-4B (docs/configs/krea2-text-encoder.json: 2560 wide, 32 heads x
// 128 over 8 KV heads, MLP 9728) with 8 of its 36 layers.
Qwen25VlConfig mid_size_qwen25_vl_config();
Qwen3VlConfig mid_size_qwen3_vl_config();

// Writes the encoder into `folder` (created), weights drawn from `seed` on
// `device` (random_weights.h). INVALID_ARGUMENT for a config that does not
// validate, UNAVAILABLE if it cannot be written.
absl::Status write_random_qwen25_vl(const Qwen25VlConfig& config, const std::string& folder, uint64_t seed,
                                    const torch::Device& device = torch::kCPU);
absl::Status write_random_qwen3_vl(const Qwen3VlConfig& config, const std::string& folder, uint64_t seed,
                                   const torch::Device& device = torch::kCPU);

}  // namespace diffusiond

#endif  // DIFFUSIOND_TOOLS_RANDOM_MODELS_QWEN_VL_RANDOM_H_
