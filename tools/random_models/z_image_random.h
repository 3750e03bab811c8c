// Random-weight Z-Image checkpoints in real file formats, for the demo
// model, tests and benchmarks (no real weights can be downloaded here).
#ifndef DIFFUSIOND_TOOLS_RANDOM_MODELS_Z_IMAGE_RANDOM_H_
#define DIFFUSIOND_TOOLS_RANDOM_MODELS_Z_IMAGE_RANDOM_H_

#include <torch/types.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/models/z_image/z_image_config.h"

namespace diffusiond {

// The built-in demo model: Z-Image's architecture at a size a laptop CPU
// denoises in seconds (dim 256, 4 + 2 layers, cap_feat_dim 128).
ZImageConfig demo_z_image_config();
// The benchmarks' mid-size configuration: dim 1536, 8 + 2 layers, 12 heads,
// Z-Image's caption width (~0.8 GB of bf16 weights).
ZImageConfig mid_size_z_image_config();

// Writes a diffusers model folder (config.json and a bf16
// diffusion_pytorch_model.safetensors) with weights drawn from `seed` as the
// reference fixture draws them: Linear weights N(0, clamp(0.6/√fan_in, 0.02,
// 0.1)²), biases N(0, 0.05²), norm weights N(1, 0.15²), pad tokens
// N(0, 0.5²). Tensors are generated one at a time, so memory stays at the
// largest tensor. Creates `folder`; UNAVAILABLE if it cannot be written.
// `device`: where the values are drawn (write_random_weights).
absl::Status write_random_z_image(const ZImageConfig& config, absl::string_view folder, uint64_t seed,
                                  const torch::Device& device = torch::kCPU);

}  // namespace diffusiond

#endif  // DIFFUSIOND_TOOLS_RANDOM_MODELS_Z_IMAGE_RANDOM_H_
