// Random-weight FLUX.1 checkpoints in the real diffusers folder format, for
// the demo model, tests and benchmarks (no real weights can be downloaded
// here).
//
// Not here: the weight-drawing rule (random_weights.h), the model itself
// (core/models/flux/).
#ifndef DIFFUSIOND_TOOLS_RANDOM_MODELS_FLUX_RANDOM_H_
#define DIFFUSIOND_TOOLS_RANDOM_MODELS_FLUX_RANDOM_H_

#include <torch/types.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/models/flux/flux_config.h"

namespace diffusiond {

// The built-in demo model: FLUX.1-dev's architecture (guidance-distilled,
// in_channels 64) at a size two CPU cores denoise at 512x512 in seconds:
// 4 heads x 64 (axes 16 + 24 + 24), 2 double + 4 single blocks,
// joint_attention_dim 256, pooled_projection_dim 128 (~18.5 MB of bf16).
FluxConfig demo_flux_config();
// The benchmarks' mid-size configuration: 12 heads x 128 (inner 1536,
// FLUX.1's head_dim and axes), 3 double + 6 single blocks, FLUX.1's T5 and
// CLIP widths, guidance-distilled (~0.98 GB of bf16 weights).
FluxConfig mid_size_flux_config();

// The pipeline's scheduler_config.json for `config`: FLUX.1-dev's
// (resolution-dependent shift) when guidance_embeds, else FLUX.1-schnell's
// (static shift 1).
std::string flux_scheduler_config_json(const FluxConfig& config);

// Writes a diffusers model folder — config.json, scheduler_config.json and
// a bf16 diffusion_pytorch_model.safetensors — with weights drawn from
// `seed` as the reference fixture draws them (write_random_weights),
// in parameter-table order. Creates `folder`; INVALID_ARGUMENT for a config
// that does not validate, UNAVAILABLE if the folder cannot be written.
// `device`: where the values are drawn (write_random_weights).
absl::Status write_random_flux(const FluxConfig& config, absl::string_view folder, uint64_t seed,
                               const torch::Device& device = torch::kCPU);

}  // namespace diffusiond

#endif  // DIFFUSIOND_TOOLS_RANDOM_MODELS_FLUX_RANDOM_H_
