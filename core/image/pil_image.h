// 8-bit images in four of Pillow's modes ("L", "RGB", "RGBA", "RGBa"), and
// the few Image operations upstream diffusers' padding_mask_crop calls on
// them (VaeImageProcessor's resize modes and apply_overlay), giving
// Pillow 9.4's bytes exactly: new, crop, paste (plain, and through an "L"
// mask), convert, ImageOps.invert and alpha_composite. Ported from the
// integer arithmetic of Pillow's Convert.c, Paste.c and AlphaComposite.c,
// and checked against Pillow itself (tests/unit/image/pil_image_test.cc).
//
// Not here: resampling (pil_resample.h), PNG (png.h), the crop's recipe
// (core/pipeline/mask_crop.h).
#ifndef DIFFUSIOND_CORE_IMAGE_PIL_IMAGE_H_
#define DIFFUSIOND_CORE_IMAGE_PIL_IMAGE_H_

#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"

namespace diffusiond {

// "L" grey, "RGB", "RGBA" with straight alpha, "RGBa" with premultiplied
// alpha.
enum class PilMode { kL, kRgb, kRgba, kRgbPremultiplied };

// Pillow's name of `mode` ("L", "RGB", "RGBA", "RGBa").
absl::string_view pil_mode_name(PilMode mode);
// Bytes per pixel: 1, 3, 4, 4.
int pil_bands(PilMode mode);

// A `width` x `height` image, row-major, its bands interleaved (Pillow
// pads "RGB" to 4 bytes a pixel in memory; the padding is no value, so it
// is not kept here). A value type; copies are deep.
struct PilImage {
  PilMode mode = PilMode::kL;
  int64_t width = 0;
  int64_t height = 0;
  std::vector<uint8_t> pixels;  // width * height * pil_bands(mode) bytes

  int bands() const { return pil_bands(mode); }
  // The first byte of pixel (x, y). REQUIRES: inside the image.
  uint8_t* at(int64_t x, int64_t y) { return pixels.data() + (y * width + x) * bands(); }
  const uint8_t* at(int64_t x, int64_t y) const { return pixels.data() + (y * width + x) * bands(); }
};

// A box by its corners, Pillow's (left, upper, right, lower): columns
// [x0, x1) and rows [y0, y1).
struct PilBox {
  int64_t x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  int64_t width() const { return x1 - x0; }
  int64_t height() const { return y1 - y0; }
};

// Image.new(mode, (width, height)): every byte 0.
PilImage pil_new(PilMode mode, int64_t width, int64_t height);

// `image`.crop(box). REQUIRES: `box` inside the image, not inverted.
PilImage pil_crop(const PilImage& image, const PilBox& box);

// `image`.convert(mode) for the conversions the crop needs: L to RGB and
// RGBA (grey copied to each colour, alpha 255), RGB to L (ITU-R 601-2 in
// Pillow's 16-bit fixed point) and RGBA (alpha 255), RGBA to RGB (alpha
// dropped) and RGBa (premultiplied, rounded), RGBa to RGBA (divided back,
// truncated), and any mode to itself (a copy). REQUIRES: one of those.
PilImage pil_convert(const PilImage& image, PilMode mode);

// `dest`->paste(source, (x, y)): `source` converted to `dest`'s mode
// (pil_convert), then copied over `dest`, clipped to it.
void pil_paste(PilImage* dest, const PilImage& source, int64_t x, int64_t y);

// `dest`->paste(source, (0, 0), mask): each byte, alpha included, becomes
// (dest·(255 − m) + source·m) / 255, rounded as Pillow's BLEND does, m
// the mask's value at that pixel. REQUIRES: `source` in `dest`'s mode,
// `mask` "L", all three the same size.
void pil_paste_masked(PilImage* dest, const PilImage& source, const PilImage& mask);

// ImageOps.invert(image) of an "L" image: 255 − v. REQUIRES: mode L.
PilImage pil_invert(const PilImage& image);

// Image.alpha_composite(dest, source): `source` over `dest` in Pillow's
// integer arithmetic (7 extra bits, rounded divisions). REQUIRES: both
// RGBA, the same size.
PilImage pil_alpha_composite(const PilImage& dest, const PilImage& source);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_IMAGE_PIL_IMAGE_H_
