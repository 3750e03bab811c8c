// A Generate's image inputs as upstream's VaeImageProcessor prepares them:
// the init image as float [3, H, W] in [0, 1] (PNG bytes / 255, or a
// tensor), the inpainting mask as float [H, W] in [0, 1] (PNG converted to
// grey as PIL's convert("L") does), and from those the VAE's input and the
// latent-size mask; for padding_mask_crop, the PNGs as Pillow opens them.
// One home for what the server, the CLI and Generate each need.
//
// Not here: PNG itself (core/image/png.h), the encode (the engine), the
// blending (denoise_loop.h ImageStart).
#ifndef DIFFUSIOND_CORE_PIPELINE_IMAGE_INPUTS_H_
#define DIFFUSIOND_CORE_PIPELINE_IMAGE_INPUTS_H_

#include <torch/types.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/image/pil_image.h"

namespace diffusiond {

// The pixels of PNG `png` (any colour type; alpha dropped) as float32
// [3, H, W] in [0, 1]. INVALID_ARGUMENT naming `field` for bytes that are
// not a PNG, or one over kGenerateMaxSide per side; DATA_LOSS when damaged.
absl::StatusOr<torch::Tensor> image_from_png(absl::string_view png, absl::string_view field);

// The grey levels of PNG `png` as float32 [H, W] in [0, 1], converted as
// PIL's convert("L"): (19595·R + 38470·G + 7471·B + 2^15) >> 16. Errors as
// image_from_png().
absl::StatusOr<torch::Tensor> mask_from_png(absl::string_view png, absl::string_view field);

// PNG `png` as Pillow's Image.open gives it, for padding_mask_crop
// (mask_crop.h): an 8-bit grey file as "L", an 8-bit RGB one as "RGB".
// INVALID_ARGUMENT naming `field` and padding_mask_crop for any other
// colour type, bit depth or a tRNS chunk (Pillow opens those in modes whose
// resampling and compositing are not ported: palette, alpha, 16-bit grey);
// otherwise errors as image_from_png().
absl::StatusOr<PilImage> pil_image_from_png(absl::string_view png, absl::string_view field);

// OK when `image` is a float [3, H, W] with every value in [0, 1]
// (upstream's tensor convention) and sides of 1 to kGenerateMaxSide;
// INVALID_ARGUMENT naming `field` otherwise.
absl::Status check_image_input(const torch::Tensor& image, absl::string_view field);
// The same for a mask [H, W].
absl::Status check_mask_input(const torch::Tensor& mask, absl::string_view field);

// `tensor` with its leading dimensions of size 1 dropped until it has
// `rank` dimensions ([1, 3, H, W] -> [3, H, W]); unchanged when it cannot.
torch::Tensor squeeze_leading(const torch::Tensor& tensor, int64_t rank);

// The VAE's input for `image` [3, H, W] in [0, 1]: [1, 3, H, W] float32
// 2x − 1, as VaeImageProcessor's normalize.
torch::Tensor vae_input(const torch::Tensor& image);

// The mask at latent size for `mask` [H, W] in [0, 1]: binarized at 0.5
// (VaeImageProcessor's do_binarize) and taken at every `factor`-th pixel
// (interpolate(mode="nearest") to [H / factor, W / factor]), [1, h, w]
// float32: 1 repainted, 0 kept. REQUIRES: H and W multiples of `factor`.
torch::Tensor latent_mask(const torch::Tensor& mask, int64_t factor);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PIPELINE_IMAGE_INPUTS_H_
