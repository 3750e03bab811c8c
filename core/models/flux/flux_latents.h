// FLUX's packed latent layout (FluxPipeline._pack_latents and friends): a
// [B, C, H, W] latent becomes [B, (H/2)(W/2), 4C] tokens, token index
// row * (W/2) + col over the 2x2-patch grid, feature index c * 4 + dy * 2 + dx
// (channel-major). Image position ids are (0, row, col) per token.
//
// Not here: the forward (flux_model.h).
#ifndef DIFFUSIOND_CORE_MODELS_FLUX_FLUX_LATENTS_H_
#define DIFFUSIOND_CORE_MODELS_FLUX_FLUX_LATENTS_H_

#include <torch/types.h>

#include <cstdint>

#include "absl/status/statusor.h"

namespace diffusiond {

// Packs latents [B, C, H, W] into [B, (H/2)(W/2), 4C], same dtype.
// INVALID_ARGUMENT unless 4-D with H and W even and positive.
absl::StatusOr<torch::Tensor> pack_latents(const torch::Tensor& latents);

// Inverts pack_latents for a latent of `height` x `width` (latent pixels,
// not image pixels as upstream's _unpack_latents takes): [B, S, F] ->
// [B, F/4, height, width]. INVALID_ARGUMENT unless height and width are
// even and positive, S = (height/2)(width/2) and F is a multiple of 4.
absl::StatusOr<torch::Tensor> unpack_latents(const torch::Tensor& packed, int64_t height, int64_t width);

// The image position ids of a `height` x `width` latent: [(height/2)
// (width/2), 3] float32 rows (0, row, col). INVALID_ARGUMENT unless height
// and width are even and positive.
absl::StatusOr<torch::Tensor> latent_image_ids(int64_t height, int64_t width);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_FLUX_FLUX_LATENTS_H_
