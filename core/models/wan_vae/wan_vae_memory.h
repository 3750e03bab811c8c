// How much activation memory a decode or encode of the causal 3-D VAE
// needs, so the engine can reserve it before running one. Not a formula
// but a walk: the estimate replays, tensor by tensor, what
// wan_vae_network.cc allocates and frees for each chunk (the feature
// caches that persist from chunk to chunk included), and what libtorch
// 1.13's CPU convolutions add (oneDNN's channel-blocked copies of input and
// output, or the native path's column buffer where libtorch takes it), and
// keeps the peak; then the allocator's share is added
// (activation_allocator_slack_bytes: 8 MiB + 10%). The walk's tensor bytes
// came within 0.1% of an activation arena's peak of live bytes on the same
// decode, and the whole within the measured peak RSS
// (tests/unit/models/wan_vae_rss_test.cc).
//
// Not here: weights (the loader's plan counts them) or running anything.
#ifndef DIFFUSIOND_CORE_MODELS_WAN_VAE_WAN_VAE_MEMORY_H_
#define DIFFUSIOND_CORE_MODELS_WAN_VAE_WAN_VAE_MEMORY_H_

#include <cstdint>
#include <optional>

#include "core/models/common/attention.h"
#include "core/models/wan_vae/wan_vae_config.h"
#include "core/models/wan_vae/wan_vae_tiling.h"

namespace diffusiond {

// The peak bytes of one decode, and what they are made of.
struct WanVaeDecodeBytes {
  int64_t streamed = 0;  // decode_frames(), each chunk's frames handed on; with the allocator's share
  int64_t joined = 0;    // decode(), every chunk's frames kept, then joined; with the allocator's share
  int64_t cache = 0;     // the feature caches at their fullest (every tile's, tiled)
  int64_t chunk = 0;     // one chunk's working tensors at their peak beyond the caches
  int64_t frames = 0;    // every decoded frame, at the compute dtype
};

// The activation bytes of a decode of latents [batch, z_dim, frames, h, w]
// at elements of `element_bytes`, untiled or with `tiling` (used when the
// latents are larger than a tile).
WanVaeDecodeBytes wan_vae_decode_activation_bytes(const WanVaeConfig& config, int64_t batch, int64_t frames,
                                                  int64_t h, int64_t w, int64_t element_bytes,
                                                  const std::optional<WanVaeTiling>& tiling,
                                                  const AttentionOptions& attention = {});

// The peak activation bytes of an encode of a clip [batch, in_channels,
// frames, height, width] (frames = 1 + 4k), untiled or with `tiling`; the
// clip itself is the caller's and not counted.
int64_t wan_vae_encode_activation_bytes(const WanVaeConfig& config, int64_t batch, int64_t frames, int64_t height,
                                        int64_t width, int64_t element_bytes,
                                        const std::optional<WanVaeTiling>& tiling,
                                        const AttentionOptions& attention = {});

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_WAN_VAE_WAN_VAE_MEMORY_H_
