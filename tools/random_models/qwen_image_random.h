// Random-weight Qwen-Image checkpoints in the real diffusers folder format,
// for the demo model, tests and benchmarks (no real weights can be
// downloaded here).
//
// Not here: the weight-drawing rule (random_weights.h), the model itself
// (core/models/qwen_image/).
#ifndef DIFFUSIOND_TOOLS_RANDOM_MODELS_QWEN_IMAGE_RANDOM_H_
#define DIFFUSIOND_TOOLS_RANDOM_MODELS_QWEN_IMAGE_RANDOM_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/models/qwen_image/qwen_image_config.h"

namespace diffusiond {

// The built-in demo model: Qwen-Image's architecture at the demo FLUX's
// width, 4 heads x 64 (RoPE axes 16 + 24 + 24), 4 double-stream blocks,
// joint_attention_dim 256 (~19 MB of bf16).
QwenImageConfig demo_qwen_image_config();
// The benchmarks' mid-size configuration: 12 heads x 128 (inner 1536,
// Qwen-Image's head_dim and RoPE axes), 8 double-stream blocks (each block
// costs about one Z-Image layer per token, so a step costs about the
// mid-size Z-Image's), Qwen2.5-VL's width 3584 (~1.4 GB of bf16: the
// blocks' six-way modulation Linears are a third of it). Its pipeline feeds
// a typical prompt of 128 Qwen2.5-VL tokens.
QwenImageConfig mid_size_qwen_image_config();

// Writes a diffusers model folder (config.json and a bf16
// diffusion_pytorch_model.safetensors) with weights drawn from `seed` as the
// reference fixture draws them (write_random_weights), in parameter-table
// order; the schedule is the family's default (no scheduler_config.json).
// Creates `folder`; INVALID_ARGUMENT for a config that does not validate,
// UNAVAILABLE if the folder cannot be written.
absl::Status write_random_qwen_image(const QwenImageConfig& config, absl::string_view folder, uint64_t seed);

}  // namespace diffusiond

#endif  // DIFFUSIOND_TOOLS_RANDOM_MODELS_QWEN_IMAGE_RANDOM_H_
