#include "core/image/pil_image.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace diffusiond {
namespace {

// Pillow's rounded division by 255 of a product of two bytes (plus 128):
// ((t >> 8) + t) >> 8, exact for every t it is used on.
inline uint32_t shift_for_div255(uint32_t t) { return ((t >> 8) + t) >> 8; }
inline uint8_t div255(uint32_t t) { return static_cast<uint8_t>(shift_for_div255(t + 128)); }
inline uint8_t mul_div255(uint32_t a, uint32_t b) { return div255(a * b); }

// Pillow's L24: grey as 16.16 fixed point, 0.299 R + 0.587 G + 0.114 B.
inline uint8_t luma(const uint8_t* rgb) {
  return static_cast<uint8_t>((rgb[0] * 19595u + rgb[1] * 38470u + rgb[2] * 7471u + 0x8000u) >> 16);
}

// Applies `convert(in, out)` to every pixel of `image` into a new image of
// `mode`.
template <typename Convert>
PilImage convert_pixels(const PilImage& image, PilMode mode, Convert convert) {
  PilImage out = pil_new(mode, image.width, image.height);
  const int in_bands = image.bands(), out_bands = out.bands();
  const int64_t n = image.width * image.height;
  for (int64_t i = 0; i < n; ++i) convert(&image.pixels[i * in_bands], &out.pixels[i * out_bands]);
  return out;
}

}  // namespace

absl::string_view pil_mode_name(PilMode mode) {
  switch (mode) {
    case PilMode::kL: return "L";
    case PilMode::kRgb: return "RGB";
    case PilMode::kRgba: return "RGBA";
    case PilMode::kRgbPremultiplied: return "RGBa";
  }
  return "?";
}

int pil_bands(PilMode mode) {
  switch (mode) {
    case PilMode::kL: return 1;
    case PilMode::kRgb: return 3;
    case PilMode::kRgba:
    case PilMode::kRgbPremultiplied: return 4;
  }
  return 0;
}

PilImage pil_new(PilMode mode, int64_t width, int64_t height) {
  assert(width >= 0 && height >= 0);
  PilImage image;
  image.mode = mode;
  image.width = width;
  image.height = height;
  image.pixels.assign(static_cast<size_t>(width * height * pil_bands(mode)), 0);
  return image;
}

PilImage pil_crop(const PilImage& image, const PilBox& box) {
  assert(box.x0 >= 0 && box.y0 >= 0 && box.x0 <= box.x1 && box.y0 <= box.y1 && box.x1 <= image.width &&
         box.y1 <= image.height);
  PilImage out = pil_new(image.mode, box.width(), box.height());
  const size_t row_bytes = static_cast<size_t>(box.width() * image.bands());
  for (int64_t y = 0; y < box.height() && row_bytes != 0; ++y) {
    std::memcpy(out.at(0, y), image.at(box.x0, box.y0 + y), row_bytes);
  }
  return out;
}

PilImage pil_convert(const PilImage& image, PilMode mode) {
  if (image.mode == mode) return image;
  using M = PilMode;
  const M from = image.mode;
  if (from == M::kL && mode == M::kRgb) {
    return convert_pixels(image, mode, [](const uint8_t* in, uint8_t* out) { out[0] = out[1] = out[2] = in[0]; });
  }
  if (from == M::kL && mode == M::kRgba) {
    return convert_pixels(image, mode, [](const uint8_t* in, uint8_t* out) {
      out[0] = out[1] = out[2] = in[0];
      out[3] = 255;
    });
  }
  if (from == M::kRgb && mode == M::kL) {
    return convert_pixels(image, mode, [](const uint8_t* in, uint8_t* out) { out[0] = luma(in); });
  }
  if (from == M::kRgb && mode == M::kRgba) {
    return convert_pixels(image, mode, [](const uint8_t* in, uint8_t* out) {
      std::memcpy(out, in, 3);
      out[3] = 255;
    });
  }
  if (from == M::kRgba && mode == M::kRgb) {
    return convert_pixels(image, mode, [](const uint8_t* in, uint8_t* out) { std::memcpy(out, in, 3); });
  }
  if (from == M::kRgba && mode == M::kRgbPremultiplied) {
    return convert_pixels(image, mode, [](const uint8_t* in, uint8_t* out) {
      for (int c = 0; c < 3; ++c) out[c] = mul_div255(in[c], in[3]);
      out[3] = in[3];
    });
  }
  if (from == M::kRgbPremultiplied && mode == M::kRgba) {
    // Pillow leaves the colours of a transparent or opaque pixel as they
    // are, and truncates the division of the others (clipped to 255).
    return convert_pixels(image, mode, [](const uint8_t* in, uint8_t* out) {
      const uint32_t alpha = in[3];
      for (int c = 0; c < 3; ++c) {
        out[c] = alpha == 0 || alpha == 255 ? in[c] : static_cast<uint8_t>(std::min(255u, 255u * in[c] / alpha));
      }
      out[3] = in[3];
    });
  }
  assert(false && "a conversion pil_convert does not port");
  return image;
}

void pil_paste(PilImage* dest, const PilImage& source, int64_t x, int64_t y) {
  const PilImage converted = pil_convert(source, dest->mode);
  const int64_t x0 = std::max<int64_t>(x, 0), y0 = std::max<int64_t>(y, 0);
  const int64_t x1 = std::min(x + converted.width, dest->width), y1 = std::min(y + converted.height, dest->height);
  if (x0 >= x1 || y0 >= y1) return;
  const size_t row_bytes = static_cast<size_t>((x1 - x0) * dest->bands());
  for (int64_t row = y0; row < y1; ++row) {
    std::memcpy(dest->at(x0, row), converted.at(x0 - x, row - y), row_bytes);
  }
}

void pil_paste_masked(PilImage* dest, const PilImage& source, const PilImage& mask) {
  assert(source.mode == dest->mode && mask.mode == PilMode::kL);
  assert(source.width == dest->width && source.height == dest->height);
  assert(mask.width == dest->width && mask.height == dest->height);
  const int bands = dest->bands();
  const int64_t n = dest->width * dest->height;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t m = mask.pixels[i];
    uint8_t* out = &dest->pixels[i * bands];
    const uint8_t* in = &source.pixels[i * bands];
    for (int c = 0; c < bands; ++c) out[c] = div255(out[c] * (255 - m) + in[c] * m);
  }
}

PilImage pil_invert(const PilImage& image) {
  assert(image.mode == PilMode::kL);
  PilImage out = image;
  for (uint8_t& v : out.pixels) v = static_cast<uint8_t>(255 - v);
  return out;
}

PilImage pil_alpha_composite(const PilImage& dest, const PilImage& source) {
  assert(dest.mode == PilMode::kRgba && source.mode == PilMode::kRgba);
  assert(dest.width == source.width && dest.height == source.height);
  constexpr uint32_t kPrecisionBits = 7;
  PilImage out = pil_new(PilMode::kRgba, dest.width, dest.height);
  const int64_t n = dest.width * dest.height;
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* d = &dest.pixels[i * 4];
    const uint8_t* s = &source.pixels[i * 4];
    uint8_t* o = &out.pixels[i * 4];
    if (s[3] == 0) {
      std::memcpy(o, d, 4);
      continue;
    }
    // The blend's weights in 7 extra bits; every product fits 32 bits.
    const uint32_t blend = d[3] * (255u - s[3]);
    const uint32_t out_alpha_255 = s[3] * 255u + blend;
    const uint32_t coef1 = s[3] * 255u * 255u * (1u << kPrecisionBits) / out_alpha_255;
    const uint32_t coef2 = 255u * (1u << kPrecisionBits) - coef1;
    for (int c = 0; c < 3; ++c) {
      const uint32_t t = s[c] * coef1 + d[c] * coef2;
      o[c] = static_cast<uint8_t>(shift_for_div255(t + (0x80u << kPrecisionBits)) >> kPrecisionBits);
    }
    o[3] = static_cast<uint8_t>(shift_for_div255(out_alpha_255 + 0x80u));
  }
  return out;
}

}  // namespace diffusiond
