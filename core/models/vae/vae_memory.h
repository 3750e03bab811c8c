// How much activation memory a VAE decode needs, so the engine can reserve
// it before running one. An upper bound, derived from which tensors
// vae_network.cc keeps alive at once and what libtorch's oneDNN convs add,
// checked against measured peaks (tests/unit/models/vae_rss_test.cc).
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
// elements of `element_bytes`, untiled or with `tiling`. With S the pixels
// per item at a stage and b(C) = C rounded up to a multiple of 16 (oneDNN
// holds a conv's input reordered into channel blocks, and its output):
//   conv C_in -> C_out:     b(C_in) + b(C_out) beyond its live input
//   resnet C_in -> C_out:   max(2 C_in + conv(C_in, C_out), C_in + 2 C_out,
//                               C_in + C_out + conv(C_out, C_out)) S
//   upsample C at S -> 4S:  max(5 C S, (C + conv(C, C)) 4S)
//   attention C over S:     7 C S + min(S^2, max_scores_bytes / E)
//   output:                 max(2 C_0, C_0 + conv(C_0, out)) S
// One forward = batch * E * (max over stages + the latent). Untiled, the
// forward runs on the whole latent. Tiled (a latent side above the tile),
// it runs on one latent_tile^2 tile, plus the whole latent, the output held
// twice (row strips, then their concatenation) and two rows of decoded
// tiles (the row above is kept for blending): + batch * E * (L h w +
// 2 out H W + 2 cols out sample_tile^2), cols = ceil(w / stride).
// These are tensor bytes; what RSS shows on top is the allocator's (see
// tests/unit/models/vae_rss_test.cc).
int64_t vae_decode_activation_bytes(const VaeConfig& config, int64_t batch, int64_t h, int64_t w,
                                    int64_t element_bytes, const std::optional<VaeTiling>& tiling,
                                    const AttentionOptions& attention = {});

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_VAE_VAE_MEMORY_H_
