// A random-weight causal 3-D VAE in diffusers' layout (config.json and
// diffusion_pytorch_model.safetensors) as AutoencoderKLWan or
// AutoencoderKLQwenImage (by the config's class), for the pipelines the
// demo and the tests write. The decoded frames are noise.
//
// Not here: the weight-drawing rule (random_weights.h), the model
// (core/models/wan_vae/).
#ifndef DIFFUSIOND_TOOLS_RANDOM_MODELS_WAN_VAE_RANDOM_H_
#define DIFFUSIOND_TOOLS_RANDOM_MODELS_WAN_VAE_RANDOM_H_

#include <torch/types.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "core/models/wan_vae/wan_vae_config.h"

namespace diffusiond {

// The demo pipelines' AutoencoderKLQwenImage (Qwen-Image's, Krea 2's):
// upstream's layout (16 latent channels, factor 8, its latent statistics)
// at base_dim 16, a sixth of the real widths (a 512 x 512 image in about
// a second on two cores).
WanVaeConfig demo_qwen_image_vae_config();

// Qwen-Image's own AutoencoderKLQwenImage (docs/configs/qwen-image-vae.json:
// base_dim 96, 127 M parameters), for the benchmarks' decode at 1024².
WanVaeConfig qwen_image_vae_config();

// The Wan demo pipeline's AutoencoderKLWan: Wan 2.1's layout (z 16, dim_mult [1, 2, 4, 4], 2 res
// blocks, time halved twice) at base_dim 8, with Wan 2.1's latent
// statistics: a few frames of 256 x 256 decode in seconds on two cores.
WanVaeConfig demo_wan_vae_config();

// Writes the VAE into `folder` (created), weights drawn from `seed` on
// `device`. INVALID_ARGUMENT for a config that does not validate,
// UNAVAILABLE if it cannot be written.
absl::Status write_random_wan_vae(const WanVaeConfig& config, const std::string& folder, uint64_t seed,
                                  const torch::Device& device = torch::kCPU);

}  // namespace diffusiond

#endif  // DIFFUSIOND_TOOLS_RANDOM_MODELS_WAN_VAE_RANDOM_H_
