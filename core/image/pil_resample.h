// Pillow 9.4's Image.resize(size, filter, box) of an 8-bit image, byte for
// byte, with the two filters upstream diffusers' VaeImageProcessor uses:
// its resample "lanczos" (no reducing_gap), and Image.resize's own default,
// bicubic, which _resize_and_fill's edge strips get by passing none. The
// port of Resample.c's two-pass convolution: per output pixel, the kernel
// (support scaled by the downscale factor) is sampled at the input pixels
// its support covers, normalised to sum 1 in double, then rounded to fixed
// point with 22 fractional bits; the horizontal pass (over only the rows
// the vertical pass reads) and the vertical pass each round (+ 2^21) and
// clip to a byte. Either pass is skipped when its axis keeps its size and
// the box spans it, and an integer box of the output's size is a plain
// crop, as Pillow does. Checked against Pillow itself
// (tests/unit/image/pil_resample_test.cc).
//
// Not here: the other filters and reducing_gap (upstream's padding_mask_crop
// uses none of them), the image type and its other operations
// (pil_image.h).
#ifndef DIFFUSIOND_CORE_IMAGE_PIL_RESAMPLE_H_
#define DIFFUSIOND_CORE_IMAGE_PIL_RESAMPLE_H_

#include <array>
#include <cstdint>

#include "core/image/pil_image.h"

namespace diffusiond {

// A source box in input pixels, (x0, y0, x1, y1), which Pillow reads as C
// floats: fractional, or of no width or height (upstream's fill strips
// resize a box of zero height to stretch an image's edge row).
using PilResizeBox = std::array<float, 4>;

// Pillow's Image.Resampling.LANCZOS (Lanczos-3, support 3) and BICUBIC
// (Keys' cubic with a = -0.5, support 2).
enum class PilFilter { kLanczos, kBicubic };

// `image`.resize((width, height), filter, box). "RGBA" is resized
// premultiplied (converted to "RGBa" and back), as Image.resize does.
// REQUIRES: width and height >= 1, `box` inside the image with x0 <= x1,
// y0 <= y1 (Pillow's own ValueErrors), and mode L, RGB, RGBA or RGBa.
PilImage pil_resize(const PilImage& image, int64_t width, int64_t height, PilFilter filter, const PilResizeBox& box);

// The same with the whole image as the box.
PilImage pil_resize(const PilImage& image, int64_t width, int64_t height, PilFilter filter);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_IMAGE_PIL_RESAMPLE_H_
