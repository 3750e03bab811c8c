// Tiled decode and encode of the causal 3-D VAE, as diffusers'
// enable_tiling() on AutoencoderKLWan / AutoencoderKLQwenImage does them:
// overlapping spatial tiles, each with a feature cache of its own, blended
// linearly with the tile above and then the tile to the left (in place, so
// later tiles blend with blended neighbours), cropped to the stride and
// concatenated.
//
// The decode runs chunk by chunk across all tiles (one latent frame of
// every tile, then the next), so each chunk's frames are whole when it
// ends and go to the consumer; upstream decodes tile by tile over all
// frames and blends at the end. Blending is per frame, so the results are
// the same; the memory is not: every tile keeps its cache for the whole
// decode (about (tile / stride)^2 times the untiled cache), where upstream
// keeps every decoded frame. For one frame (an image) nothing is cached.
//
// Not here: the networks (wan_vae_network.h), clamping, normalisation.
#ifndef DIFFUSIOND_CORE_MODELS_WAN_VAE_WAN_VAE_TILING_H_
#define DIFFUSIOND_CORE_MODELS_WAN_VAE_WAN_VAE_TILING_H_

#include <torch/types.h>

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "core/models/wan_vae/wan_vae_network.h"

namespace diffusiond {

// Upstream's tile_sample_min_height / _width and tile_sample_stride_height
// / _width, in pixels; the defaults are its own (256 every 192).
struct WanVaeTiling {
  int64_t sample_height = 256;
  int64_t sample_width = 256;
  int64_t stride_height = 192;
  int64_t stride_width = 192;

  // Checks 0 < stride <= tile and that a tile and a stride hold at least one
  // latent at `spatial_factor`. INVALID_ARGUMENT naming the field.
  absl::Status validate(int64_t spatial_factor) const;
  // Whether latents of h x w (decode) or pixels of H x W (encode) are
  // larger than one tile, so that upstream tiles them.
  bool tiles_latents(int64_t h, int64_t w, int64_t spatial_factor) const;
  bool tiles_pixels(int64_t height, int64_t width) const;
};

// Decodes one latent frame of one tile with that tile's cache.
using TileChunkDecoder = std::function<torch::Tensor(const torch::Tensor& z, FeatureCache* cache)>;
// Takes one chunk of assembled frames [B, C, n, H, W]; an error stops the
// decode.
using ChunkSink = std::function<absl::Status(torch::Tensor frames)>;

// Decodes z [B, C, F, h, w] tile by tile, chunk by chunk, handing each
// chunk's assembled frames (cut to the image, unclamped) to `sink` in
// order. Returns the sink's first error. Throws what `decode` or libtorch
// throws. REQUIRES: tiling.validate(spatial_factor) is OK.
absl::Status run_tiled_decode(const torch::Tensor& z, const WanVaeTiling& tiling, int64_t spatial_factor,
                              const TileChunkDecoder& decode, const ChunkSink& sink);

// Encodes x [B, C, T, H, W] tile by tile with `encode` (one tile's whole
// clip, its own cache) and returns the blended moments [B, 2z, t, H/f,
// W/f]. Throws as run_tiled_decode.
torch::Tensor run_tiled_encode(const torch::Tensor& x, const WanVaeTiling& tiling, int64_t spatial_factor,
                               const std::function<torch::Tensor(const torch::Tensor& tile)>& encode);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_WAN_VAE_WAN_VAE_TILING_H_
