// The two OCP 8-bit float formats diffusiond stores weights in, their
// parameters, and the scalar reference codec every other variant is tested
// against. Plain C++ with no dependencies, so nvcc and host code share it.
//
// Layout (one byte, sign-magnitude):      e4m3fn            e5m2
//   sign | exponent | mantissa            1 | 4 | 3         1 | 5 | 2
//   exponent bias                         7                 15
//   largest finite                        448 (0x7E)        57344 (0x7B)
//   smallest normal                       2^-6              2^-14
//   smallest subnormal                    2^-9              2^-16
//   infinity                              none              0x7C / 0xFC
//   NaN                                   0x7F / 0xFF       0x7D-0x7F / 0xFD-0xFF
//
// Encoding (float -> code), the rule of this project:
//   - round to nearest, ties to even;
//   - finite values beyond the largest finite value, and ±inf, SATURATE to
//     ±largest finite (0x7E/0xFE, 0x7B/0xFB). This differs from PyTorch's
//     c10::Float8_e4m3fn, which turns |x| > 464 into NaN; it matches CUDA's
//     cvt.rn.satfinite;
//   - NaN encodes to the canonical 0x7F whatever its sign; -0 to 0x80.
// Decoding (code -> float) is exact: every code is a float32 value.
// A stored FP8 tensor is codes plus one fp32 scale: value = decode(code) * scale.
#ifndef DIFFUSIOND_KERNELS_FP8_FORMAT_H_
#define DIFFUSIOND_KERNELS_FP8_FORMAT_H_

#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

namespace diffusiond {

enum class Fp8Format : int { kE4M3Fn = 0, kE5M2 = 1 };
inline constexpr int kNumFp8Formats = 2;  // keep next to the enum

// How flags, configs, logs and tools spell each format, in enum order: the
// one table of these names.
inline constexpr const char* kFp8FormatNames[] = {"e4m3fn", "e5m2"};
static_assert(sizeof(kFp8FormatNames) / sizeof(kFp8FormatNames[0]) == kNumFp8Formats,
              "every Fp8Format needs its name in kFp8FormatNames");

inline constexpr const char* fp8_format_name(Fp8Format format) {
  return kFp8FormatNames[static_cast<int>(format)];
}

// kFp8FormatNames as strings, for flag validation.
inline std::vector<std::string> fp8_format_names() {
  return {std::begin(kFp8FormatNames), std::end(kFp8FormatNames)};
}

// Sets *format to the format spelled `name` (exactly as in
// kFp8FormatNames); false if it spells none.
inline bool parse_fp8_format(const char* name, Fp8Format* format) {
  for (int i = 0; i < kNumFp8Formats; ++i) {
    if (std::strcmp(name, kFp8FormatNames[i]) == 0) {
      *format = static_cast<Fp8Format>(i);
      return true;
    }
  }
  return false;
}

// Bit-level parameters of a format, for the encoders.
struct Fp8Params {
  int mantissa_bits;        // 3 or 2
  int exponent_bias;        // 7 or 15
  uint8_t max_code;         // largest finite magnitude code
  uint32_t max_f32_bits;    // float32 bits of the largest finite value
  uint32_t min_normal_f32_bits;  // float32 bits of the smallest normal
  // float32 bits of 2^k where ulp(2^k) equals the subnormal step: adding it
  // to a subnormal-range value leaves the code in the low bits, rounded RNE.
  uint32_t subnormal_magic_f32_bits;
};

inline constexpr Fp8Params kE4M3FnParams = {
    3, 7, 0x7E, 0x43E00000u /* 448 */, 0x3C800000u /* 2^-6 */, (127u + 14u) << 23};
inline constexpr Fp8Params kE5M2Params = {
    2, 15, 0x7B, 0x47600000u /* 57344 */, 0x38800000u /* 2^-14 */, (127u + 7u) << 23};

inline constexpr const Fp8Params& fp8_params(Fp8Format format) {
  return format == Fp8Format::kE4M3Fn ? kE4M3FnParams : kE5M2Params;
}

// Largest finite value of `format`.
inline constexpr float fp8_max_finite(Fp8Format format) {
  return format == Fp8Format::kE4M3Fn ? 448.0f : 57344.0f;
}

// Scalar reference encoder: written for clarity (frexp, nearbyint) rather
// than speed, and independent of the bit tricks in the fast variants.
uint8_t fp8_encode_ref(float value, Fp8Format format);

// Scalar reference decoder.
float fp8_decode_ref(uint8_t code, Fp8Format format);

}  // namespace diffusiond

#endif  // DIFFUSIOND_KERNELS_FP8_FORMAT_H_
