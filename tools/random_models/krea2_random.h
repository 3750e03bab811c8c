// Random-weight Krea 2 checkpoints in the real diffusers folder format, for
// the demo model, tests and benchmarks (no real weights can be downloaded
// here).
//
// Not here: the weight-drawing rule (random_weights.h), the model itself
// (core/models/krea2/).
#ifndef DIFFUSIOND_TOOLS_RANDOM_MODELS_KREA2_RANDOM_H_
#define DIFFUSIOND_TOOLS_RANDOM_MODELS_KREA2_RANDOM_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/models/krea2/krea2_config.h"

namespace diffusiond {

// The built-in demo model: Krea 2's architecture at the demo models' width,
// 4 heads x 64 (RoPE axes 16 + 24 + 24) over 2 KV heads, 4 blocks, SwiGLU
// 768; a text fusion of 4 tapped layers x 128 (2 heads, 1 layerwise + 1
// refiner block) (~10 MB of bf16).
Krea2Config demo_krea2_config();
// The benchmarks' mid-size configuration: 12 heads x 128 (hidden 1536,
// Krea 2's head_dim and RoPE axes) over 3 KV heads (Krea 2's 4:1 grouping),
// 8 blocks with SwiGLU 4096 (a block costs about one Z-Image layer per
// token); the text fusion kept small beside them: Krea 2's 12 tapped
// layers, but 1024 wide (8 heads x 128, SwiGLU 2816) with 1 layerwise and
// 1 refiner block (~0.5 GB of bf16 in all). Its pipeline feeds 128 prompt
// tokens, each a stack of the 12 layers: [128, 12, 1024].
Krea2Config mid_size_krea2_config();

// Writes a diffusers model folder (config.json and a bf16
// diffusion_pytorch_model.safetensors) with weights drawn from `seed` as the
// reference fixture draws them (write_random_weights), in parameter-table
// order; the schedule is the family's default (no scheduler_config.json).
// Creates `folder`; INVALID_ARGUMENT for a config that does not validate,
// UNAVAILABLE if the folder cannot be written.
absl::Status write_random_krea2(const Krea2Config& config, absl::string_view folder, uint64_t seed);

}  // namespace diffusiond

#endif  // DIFFUSIOND_TOOLS_RANDOM_MODELS_KREA2_RANDOM_H_
