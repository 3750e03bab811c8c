// Pixel conversion around the VAE, as diffusers' VaeImageProcessor does it
// (do_normalize=True): [-1, 1] images to uint8 NHWC pixels and back.
//
// Not here: the VAE itself (vae_model.h).
#ifndef DIFFUSIOND_CORE_MODELS_VAE_IMAGE_POSTPROCESS_H_
#define DIFFUSIOND_CORE_MODELS_VAE_IMAGE_POSTPROCESS_H_

#include <torch/types.h>

#include "absl/status/statusor.h"

namespace diffusiond {

// Returns (image * 0.5 + 0.5).clamp(0, 1) in float32, permuted to NHWC
// [B, H, W, C]: upstream's output_type="np". INVALID_ARGUMENT unless `image`
// is a floating-point [B, C, H, W].
absl::StatusOr<torch::Tensor> image_to_unit_nhwc(const torch::Tensor& image);

// Returns uint8 NHWC pixels: round-half-to-even of float32(x * 255) over
// image_to_unit_nhwc(image), as numpy's round() in output_type="pil" (not
// floor(x * 255 + 0.5), not truncation). INVALID_ARGUMENT as above.
absl::StatusOr<torch::Tensor> image_to_uint8(const torch::Tensor& image);

// Returns the VAE input for uint8 NHWC pixels [B, H, W, C]: float32(u8) /
// 255, then 2x - 1, permuted to NCHW [B, C, H, W], float32. INVALID_ARGUMENT
// unless `pixels` is a uint8 [B, H, W, C].
absl::StatusOr<torch::Tensor> uint8_to_image(const torch::Tensor& pixels);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_VAE_IMAGE_POSTPROCESS_H_
