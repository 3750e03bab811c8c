// Upstream's padding_mask_crop for inpainting (diffusers' FluxInpaintPipeline
// and QwenImageInpaintPipeline): VaeImageProcessor's get_crop_region, its
// resize modes "fill" and "crop", and apply_overlay, in Pillow's own
// arithmetic (core/image/pil_image.h, pil_resample.h), so that the
// daemon's image is upstream's. The box around the mask, padded and grown to
// the request's aspect ratio, is cut from the image and the mask and
// resized to the request's size; the inpainting runs there; its image is
// resized back to the box, pasted into the original image's frame, and the
// original image laid over it where the mask is not white (partly where it
// is grey). The output has the original image's size.
//
// Not here: the PNG inputs (image_inputs.h), the denoise and its latent
// mask (generate.cc, denoise_loop.h).
#ifndef DIFFUSIOND_CORE_PIPELINE_MASK_CROP_H_
#define DIFFUSIOND_CORE_PIPELINE_MASK_CROP_H_

#include <torch/types.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/image/pil_image.h"

namespace diffusiond {

// A request's padding_mask_crop with the inputs it needs as Pillow holds
// them: upstream takes only PIL images here.
struct MaskCrop {
  int64_t padding = 0;  // pixels added around the mask's bounding box, >= 0
  PilImage image;       // the init image as Pillow opens its PNG: "L" or "RGB", any size
  PilImage mask;        // the mask likewise, the image's size; not black: repainted
};

// get_crop_region(mask, width, height, pad): the bounding box of `mask`'s
// nonzero pixels (after convert("L")), `pad` pixels wider on each side
// within the image, then grown about its centre to the aspect ratio of
// width x height, shifted and clipped to stay inside the image.
// INVALID_ARGUMENT naming padding_mask_crop when the mask is all black
// (upstream divides by zero or inverts the box there).
absl::StatusOr<PilBox> mask_crop_region(const PilImage& mask, int64_t width, int64_t height, int64_t pad);

// VaeImageProcessor._resize_and_fill: `image` resized (Lanczos) to fit
// width x height keeping its aspect ratio, centred on black, the uncovered
// bands filled by stretching its edge rows or columns (bicubic: upstream
// passes no filter there, so Image.resize's default). "RGB".
PilImage resize_and_fill(const PilImage& image, int64_t width, int64_t height);

// VaeImageProcessor._resize_and_crop: `image` resized (Lanczos) to cover
// width x height keeping its aspect ratio, centred, the excess cut. "RGB".
PilImage resize_and_crop(const PilImage& image, int64_t width, int64_t height);

// VaeImageProcessor.apply_overlay(mask, init_image, image, box): `image`
// resized to `box` ("crop" mode) on black in `init_image`'s frame, then
// `init_image` composited over it with the inverted `mask` as alpha. "RGB"
// of `init_image`'s size. REQUIRES: `mask` and `init_image` the same size,
// `box` inside them.
PilImage apply_overlay(const PilImage& mask, const PilImage& init_image, const PilImage& image, const PilBox& box);

// What the denoise of a padding_mask_crop request starts from at width x
// height: image_processor.preprocess and mask_processor.preprocess with
// crops_coords = the box and resize_mode "fill".
struct MaskCropStart {
  PilBox box;
  torch::Tensor image;  // float32 [3, height, width]: the filled crop's bytes / 255
  torch::Tensor mask;   // float32 [height, width]: its grey levels / 255 (latent_mask binarises them)
};

// The start of `crop` at width x height. INVALID_ARGUMENT as
// mask_crop_region. REQUIRES: the image and mask of `crop` the same size.
absl::StatusOr<MaskCropStart> start_mask_crop(const MaskCrop& crop, int64_t width, int64_t height);

// The generated `pixels` (uint8 [h, w, 3]) as upstream's output for `crop`:
// apply_overlay with the original mask and image over `box`; uint8
// [H, W, 3] of the image's size.
torch::Tensor finish_mask_crop(const MaskCrop& crop, const PilBox& box, const torch::Tensor& pixels);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PIPELINE_MASK_CROP_H_
