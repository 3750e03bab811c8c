// PNG encoding and decoding of 8-bit RGB images in memory, over libpng, with
// text chunks for an image's parameters (prompt, seed, steps...).
//
// libpng reports errors by calling back and longjmp-ing; here that ends in
// an absl::Status and never crosses a C++ frame holding an object to
// destroy. Both functions are thread-safe (each call has its own libpng
// state).
//
// Text: keywords are Latin-1 bytes, as the PNG spec defines them; values are
// UTF-8. A value that is all ASCII is written as a tEXt chunk; any other as
// an uncompressed iTXt chunk, since tEXt can only carry Latin-1.
//
// Not here: turning a decoded tensor into RGB bytes
// (core/models/vae/image_postprocess.h), files (callers write the bytes).
#ifndef DIFFUSIOND_CORE_IMAGE_PNG_H_
#define DIFFUSIOND_CORE_IMAGE_PNG_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

// Text chunks in file order: (keyword, value).
using PngText = std::vector<std::pair<std::string, std::string>>;

// The largest image decode_png accepts by default: 2^28 pixels (768 MiB of
// RGB), far above any image this daemon makes, so a small malicious file
// cannot claim terabytes.
inline constexpr int64_t kDefaultMaxPngPixels = int64_t{1} << 28;

// PNG's colour types, as DecodedPng::color_type reports them.
inline constexpr int kPngColorGrey = 0, kPngColorRgb = 2, kPngColorPalette = 3, kPngColorGreyAlpha = 4,
                     kPngColorRgba = 6;

struct DecodedPng {
  int64_t width = 0;
  int64_t height = 0;
  std::vector<uint8_t> rgb;  // width * height * 3 bytes, row-major HWC
  PngText text;              // keywords as stored; values as UTF-8
  // The file's own format before the conversion: its colour type
  // (kPngColor*), bits per sample, and whether a tRNS chunk makes a colour
  // or palette entries transparent.
  int color_type = 0;
  int bit_depth = 0;
  bool has_transparency = false;
};

// Returns a PNG of the `width` x `height` 8-bit RGB image at `rgb`
// (row-major, HWC, width * height * 3 bytes), with `text` as text chunks in
// order. INVALID_ARGUMENT for a non-positive size or one over PNG's 2^31-1
// per side or whose byte count overflows; for a keyword that is empty,
// longer than 79 bytes, has a byte outside Latin-1's printable range
// (32-126, 161-255), or a leading, trailing or doubled space; and for a
// value with a NUL byte or that is not valid UTF-8 (each naming the
// keyword). RESOURCE_EXHAUSTED if memory runs out; INTERNAL naming libpng's
// message for any other libpng error.
// REQUIRES: `rgb` holds width * height * 3 bytes.
absl::StatusOr<std::string> encode_png(const uint8_t* rgb, int64_t width, int64_t height,
                                       const PngText& text);

// Decodes a PNG of any colour type and bit depth to 8-bit RGB: palettes and
// grey are expanded, 16-bit samples reduced to their high byte and alpha
// dropped (not composited). tEXt and zTXt values are converted from Latin-1
// to UTF-8, iTXt values are returned as stored. INVALID_ARGUMENT if `bytes`
// does not start with the PNG signature, or the image has more than
// `max_pixels` pixels; DATA_LOSS naming libpng's message for a corrupt or
// truncated file. A damaged file costs no more memory than its size allows:
// chunk lengths and the image size are checked against it first.
absl::StatusOr<DecodedPng> decode_png(absl::string_view bytes,
                                      int64_t max_pixels = kDefaultMaxPngPixels);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_IMAGE_PNG_H_
