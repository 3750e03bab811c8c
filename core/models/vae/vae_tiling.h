// Tiled VAE decode and encode, exactly as diffusers' enable_tiling() does it:
// overlapping input tiles run through the network one at a time, each output
// tile blended linearly with the tile above and then the tile to its left
// (in place, so later tiles blend with already blended neighbours), cropped,
// and concatenated. Only the previous row of output tiles is kept, so the
// memory of a tiled pass is one tile's forward plus two rows of output
// tiles plus the output.
//
// Not here: the networks (vae_network.h) or the memory formula
// (vae_memory.h).
#ifndef DIFFUSIOND_CORE_MODELS_VAE_VAE_TILING_H_
#define DIFFUSIOND_CORE_MODELS_VAE_VAE_TILING_H_

#include <torch/types.h>

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "core/models/vae/vae_config.h"

namespace diffusiond {

// Upstream's tile_sample_min_size / tile_latent_min_size /
// tile_overlap_factor.
struct VaeTiling {
  int64_t sample_tile = 0;  // image pixels per tile side
  int64_t latent_tile = 0;  // latents per tile side
  double overlap_factor = 0.25;

  // Checks sizes > 0 and 0 <= overlap < 1 with a positive stride.
  // INVALID_ARGUMENT naming the field.
  absl::Status validate() const;
};

// Upstream's defaults: sample_tile = config.sample_size, latent_tile =
// int(sample_size / 2^(blocks - 1)), overlap 0.25.
VaeTiling default_vae_tiling(const VaeConfig& config);

// Runs `fn` over tiles of `input` [B, C, H, W]: tiles of `in_tile` per side
// start every int(in_tile * (1 - overlap)); each output is blended over
// int(out_tile * overlap) rows/columns and cropped to out_tile - that.
// Returns the assembled output. Throws what `fn` or libtorch throws.
torch::Tensor run_tiled(const torch::Tensor& input, int64_t in_tile, int64_t out_tile, double overlap,
                        const std::function<torch::Tensor(const torch::Tensor&)>& fn);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_VAE_VAE_TILING_H_
