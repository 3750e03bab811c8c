// How much activation memory a VAE decode needs, so the engine can reserve
// it before running one. An upper bound, derived from which tensors
// vae_network.cc keeps alive at once and checked against measured peaks
// (tests/unit/models/vae_rss_test.cc).
//
// Not here: weights (the loader's plan counts them) or running anything.
#ifndef DIFFUSIOND_CORE_MODELS_VAE_VAE_MEMORY_H_
#define DIFFUSIOND_CORE_MODELS_VAE_VAE_MEMORY_H_

#include <cstdint>
#include <optional>

#include "core/models/common/attention.h"
#include "core/models/vae/vae_config.h"
#include "core/models/vae/vae_tiling.h"

namespace diffusiond {

// Returns the peak activation bytes of decode(latents [batch, L, h, w]) at
// elements of `element_bytes`, untiled or with `tiling`. With E =
// element_bytes and the decoder's stages at S pixels per item:
//   resnet C_in -> C_out:   (2 C_in + 3 C_out) S E  (input, its norm, conv
//                           output, shortcut, and libtorch's conv buffers)
//   upsample C at S -> 4S:  (C S + 3 C 4S) E
//   attention C over S:     6 C S E + min(S^2 E, max_scores_bytes)
//   output conv:            (2 C_0 + 2 out) S E
// one forward = batch * max over stages (+ the latent input). Untiled, the
// forward runs on the whole latent. Tiled (latents larger than the tile),
// it runs on one latent_tile^2 tile, plus the whole latent, the output kept twice (row strips
// and their concatenation) and two rows of decoded tiles (the row above is
// kept for blending): 2 * batch * out * H * W E + 2 * cols * batch * out *
// sample_tile^2 E, cols = ceil(w / stride).
int64_t vae_decode_activation_bytes(const VaeConfig& config, int64_t batch, int64_t h, int64_t w,
                                    int64_t element_bytes, const std::optional<VaeTiling>& tiling,
                                    const AttentionOptions& attention = {});

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_VAE_VAE_MEMORY_H_
