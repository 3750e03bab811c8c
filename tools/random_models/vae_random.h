// A random-weight AutoencoderKL in diffusers' layout (config.json and
// diffusion_pytorch_model.safetensors), for the pipelines the demo and the
// tests write. The decoded image is noise.
#ifndef DIFFUSIOND_TOOLS_RANDOM_MODELS_VAE_RANDOM_H_
#define DIFFUSIOND_TOOLS_RANDOM_MODELS_VAE_RANDOM_H_

#include <torch/types.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "core/models/vae/vae_config.h"

namespace diffusiond {

// The demo pipelines' VAE: 16 latent channels, blocks [32, 32, 64, 64] (a
// 512 x 512 image in seconds on two cores).
VaeConfig demo_vae_config();

// Writes the VAE into `folder` (created), weights drawn from `seed`.
// UNAVAILABLE if it cannot be written.
absl::Status write_random_vae(const VaeConfig& config, const std::string& folder, uint64_t seed,
                              const torch::Device& device = torch::kCPU);

}  // namespace diffusiond

#endif  // DIFFUSIOND_TOOLS_RANDOM_MODELS_VAE_RANDOM_H_
