// Deterministic 8-bit test images, made exactly as the reference scripts
// (tests/unit/image/pil_reference.py, tests/unit/pipeline/
// mask_crop_reference.py) make them for Pillow, and the FNV-1a hash their
// committed references give of Pillow's outputs.
#ifndef DIFFUSIOND_TESTS_TESTING_PIL_PATTERN_H_
#define DIFFUSIOND_TESTS_TESTING_PIL_PATTERN_H_

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/image/pil_image.h"

namespace diffusiond::testing {

// A reference script's description of one input image.
struct PilPatternSpec {
  const char* mode;  // "L", "RGB", "RGBA", "RGBa"
  int64_t width, height;
  const char* kind;  // "noise", "ramp" or "grid"
  uint32_t seed;
};

inline PilMode pil_mode_named(const std::string& name) {
  if (name == "L") return PilMode::kL;
  if (name == "RGB") return PilMode::kRgb;
  if (name == "RGBA") return PilMode::kRgba;
  return PilMode::kRgbPremultiplied;
}

// The scripts' pattern(): a 32-bit xorshift stream per image, one step per
// byte; "noise" takes its top byte, "ramp" a wrapped ramp across and down
// plus its top 4 bits, "grid" every (x, y) byte pair.
inline PilImage pil_pattern(const PilPatternSpec& spec) {
  PilImage image = pil_new(pil_mode_named(spec.mode), spec.width, spec.height);
  const std::string kind = spec.kind;
  const int bands = image.bands();
  const int64_t w = spec.width, h = spec.height;
  uint32_t state = spec.seed;
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      for (int c = 0; c < bands; ++c) {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        int64_t v = 0;
        if (kind == "noise") {
          v = state >> 24;
        } else if (kind == "ramp") {
          v = (x * 255 / std::max<int64_t>(w - 1, 1) + y * 97 / std::max<int64_t>(h - 1, 1) + c * 40 + (state >> 28)) %
              256;
        } else if (bands == 4) {
          const int64_t grid[4] = {x, (x + y) % 256, (3 * x) % 256, y};
          v = grid[c];
        } else {
          v = (x ^ y ^ (c * 85)) % 256;
        }
        image.at(x, y)[c] = static_cast<uint8_t>(v);
      }
    }
  }
  return image;
}

// FNV-1a, 64 bits, of an image's bytes.
inline uint64_t pil_fnv1a(const PilImage& image) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (uint8_t b : image.pixels) h = (h ^ b) * 0x100000001B3ull;
  return h;
}

// A reference script's record of one Pillow output.
struct PilOutputDigest {
  const char* mode;
  int64_t width, height;
  uint64_t fnv1a;
};

}  // namespace diffusiond::testing

#endif  // DIFFUSIOND_TESTS_TESTING_PIL_PATTERN_H_
