#include "kernels/fp8_cpu.h"

#include <ATen/Parallel.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/float_kind_cpu.h"
#include "kernels/torch_compat.h"

namespace diffusiond {
namespace {

// Elements per task: large enough to amortise scheduling, small enough that
// a 2-core machine still splits a 1 MiB tensor.
constexpr int64_t kGrain = 1 << 16;

inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}
inline float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// Branch-free, so the loop below vectorises. Normal range: add the
// round-half-even bias to the float32 bits and shift the exponent from
// float32's bias to the format's. Subnormal range: a float addition of a
// magic power of two makes the FPU do the rounding. Then saturate; NaN last.
template <const Fp8Params& P>
inline uint8_t encode_bits(uint32_t bits) {
  constexpr int kShift = 23 - P.mantissa_bits;
  constexpr uint32_t kRebias = uint32_t(127 - P.exponent_bias) << 23;
  const uint32_t sign = (bits >> 24) & 0x80u;
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  const uint32_t odd = (magnitude >> kShift) & 1u;
  const uint32_t rounded = magnitude + ((1u << (kShift - 1)) - 1u) + odd;
  const uint32_t normal = (rounded - kRebias) >> kShift;
  const uint32_t subnormal =
      bits_of(float_of(magnitude) + float_of(P.subnormal_magic_f32_bits)) -
      P.subnormal_magic_f32_bits;
  // Selections as masks rather than branches, so every lane runs the same code.
  const uint32_t is_subnormal = 0u - uint32_t(magnitude < P.min_normal_f32_bits);
  uint32_t code = (subnormal & is_subnormal) | (normal & ~is_subnormal);
  code = std::min<uint32_t>(code, P.max_code);
  const uint32_t is_nan = 0u - uint32_t(magnitude > 0x7F800000u);
  return static_cast<uint8_t>((0x7Fu & is_nan) | ((code | sign) & ~is_nan));
}

// kDivide: code(src[i] / factor), as a quantiser that divides by its scale
// rounds (fp8_quantize_cpu); else code(src[i] * factor).
template <const Fp8Params& P, FloatKind kKind, bool kDivide>
DIFFUSIOND_CPU_CLONES void encode_range(const void* __restrict__ src, uint8_t* __restrict__ codes, int64_t begin,
                                        int64_t end, float factor) {
  for (int64_t i = begin; i < end; ++i) {
    const float v = load_float<kKind>(src, i);
    codes[i] = encode_bits<P>(bits_of(kDivide ? v / factor : v * factor));
  }
}

// Arithmetic decode (no table gather, so it vectorises): rebias the
// exponent into float32 for normals, scale the mantissa for subnormals, and
// patch in the specials of the format.
template <const Fp8Params& P>
inline float decode_bits(uint32_t c) {
  constexpr uint32_t kMantMask = (1u << P.mantissa_bits) - 1u;
  constexpr uint32_t kMaxField = (1u << (7 - P.mantissa_bits)) - 1u;
  constexpr bool kE4M3 = P.mantissa_bits == 3;
  const uint32_t sign = (c & 0x80u) << 24;
  const uint32_t field = (c & 0x7Fu) >> P.mantissa_bits;
  const uint32_t mant = c & kMantMask;
  const uint32_t normal =
      ((field + uint32_t(127 - P.exponent_bias)) << 23) | (mant << (23 - P.mantissa_bits));
  const uint32_t subnormal = bits_of(static_cast<float>(mant) *
                                     float_of(uint32_t(127 - P.exponent_bias + 1 - P.mantissa_bits) << 23));
  const uint32_t is_sub = 0u - uint32_t(field == 0);
  uint32_t magnitude = (subnormal & is_sub) | (normal & ~is_sub);
  if constexpr (kE4M3) {
    const uint32_t is_nan = 0u - uint32_t(field == kMaxField && mant == kMantMask);
    magnitude = (0x7FC00000u & is_nan) | (magnitude & ~is_nan);
  } else {
    const uint32_t is_special = 0u - uint32_t(field == kMaxField);
    const uint32_t special = mant == 0 ? 0x7F800000u : 0x7FC00000u;
    magnitude = (special & is_special) | (magnitude & ~is_special);
  }
  return float_of(sign | magnitude);
}

template <const Fp8Params& P, FloatKind kKind>
DIFFUSIOND_CPU_CLONES
void decode_range(const uint8_t* __restrict__ codes, float scale, void* __restrict__ dst,
                  int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) store_float<kKind>(dst, i, decode_bits<P>(codes[i]) * scale);
}

using DecodeFn = void (*)(const uint8_t*, float, void*, int64_t, int64_t);

#if defined(__x86_64__)
// A 16-bit decode by table: the 256 results, made by decode_range itself
// (so equal to it bit for bit), held in eight registers and looked up 32
// codes at a time with AVX-512BW's two-register word permute. Four
// lookups of 64 entries each, merged on the code's two top bits: about
// seven instructions per 32 weights against about forty for the arithmetic
// decode, so a forward's decode of every FP8 weight runs at memory speed.
__attribute__((target("avx512f,avx512bw"))) void lookup_u16_avx512(const uint16_t* table,
                                                                   const uint8_t* __restrict__ codes,
                                                                   uint16_t* __restrict__ dst, int64_t begin,
                                                                   int64_t end) {
  __m512i t[8];
  for (int k = 0; k < 8; ++k) t[k] = _mm512_loadu_si512(table + 32 * k);
  const __m512i bit6 = _mm512_set1_epi16(0x40), bit7 = _mm512_set1_epi16(0x80);
  int64_t i = begin;
  for (; i + 32 <= end; i += 32) {
    const __m512i c = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + i)));
    const __mmask32 high6 = _mm512_test_epi16_mask(c, bit6), high7 = _mm512_test_epi16_mask(c, bit7);
    const __m512i low = _mm512_mask_blend_epi16(high6, _mm512_permutex2var_epi16(t[0], c, t[1]),
                                                _mm512_permutex2var_epi16(t[2], c, t[3]));
    const __m512i high = _mm512_mask_blend_epi16(high6, _mm512_permutex2var_epi16(t[4], c, t[5]),
                                                 _mm512_permutex2var_epi16(t[6], c, t[7]));
    _mm512_storeu_si512(dst + i, _mm512_mask_blend_epi16(high7, low, high));
  }
  for (; i < end; ++i) dst[i] = table[codes[i]];
}

bool has_avx512bw() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  return has;
}
#endif

template <const Fp8Params& P>
DecodeFn pick_decoder(FloatKind kind) {
  switch (kind) {
    case FloatKind::kF32: return &decode_range<P, FloatKind::kF32>;
    case FloatKind::kBF16: return &decode_range<P, FloatKind::kBF16>;
    case FloatKind::kF16: return &decode_range<P, FloatKind::kF16>;
  }
  return nullptr;
}

using EncodeFn = void (*)(const void*, uint8_t*, int64_t, int64_t, float);

template <const Fp8Params& P, bool kDivide>
EncodeFn pick_encoder(FloatKind kind) {
  switch (kind) {
    case FloatKind::kF32:
      return &encode_range<P, FloatKind::kF32, kDivide>;
    case FloatKind::kBF16:
      return &encode_range<P, FloatKind::kBF16, kDivide>;
    case FloatKind::kF16:
      return &encode_range<P, FloatKind::kF16, kDivide>;
  }
  return nullptr;
}

template <bool kDivide>
void encode_all(const void* src, FloatKind kind, int64_t n, Fp8Format format, float factor, uint8_t* codes) {
  const EncodeFn fn = format == Fp8Format::kE4M3Fn ? pick_encoder<kE4M3FnParams, kDivide>(kind)
                                                   : pick_encoder<kE5M2Params, kDivide>(kind);
  at::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) { fn(src, codes, begin, end, factor); });
}

template <FloatKind kKind>
float abs_max_range(const void* src, int64_t begin, int64_t end) {
  float m = 0.0f;
  for (int64_t i = begin; i < end; ++i) {
    const float a = std::fabs(load_float<kKind>(src, i));
    m = a > m ? a : m;  // NaN compares false and is skipped
  }
  return m;
}

}  // namespace

void fp8_encode_cpu(const void* src, FloatKind kind, int64_t n, Fp8Format format,
                    float inv_scale, uint8_t* codes) {
  encode_all</*kDivide=*/false>(src, kind, n, format, inv_scale, codes);
}

float fp8_quantize_cpu(const void* src, FloatKind kind, int64_t n, Fp8Format format, float min_scale, uint8_t* codes) {
  const float scale = std::max(abs_max_cpu(src, kind, n) / fp8_max_finite(format), min_scale);
  encode_all</*kDivide=*/true>(src, kind, n, format, scale, codes);
  return scale;
}

void fp8_decode_cpu(const uint8_t* codes, int64_t n, Fp8Format format, float scale,
                    FloatKind kind, void* dst) {
  const DecodeFn fn = format == Fp8Format::kE4M3Fn ? pick_decoder<kE4M3FnParams>(kind)
                                                   : pick_decoder<kE5M2Params>(kind);
#if defined(__x86_64__)
  if (kind != FloatKind::kF32 && has_avx512bw()) {
    static const std::array<uint8_t, 256> kEveryCode = [] {
      std::array<uint8_t, 256> a{};
      for (int c = 0; c < 256; ++c) a[c] = static_cast<uint8_t>(c);
      return a;
    }();
    alignas(64) uint16_t table[256];
    fn(kEveryCode.data(), scale, table, 0, 256);
    at::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
      lookup_u16_avx512(table, codes, static_cast<uint16_t*>(dst), begin, end);
    });
    return;
  }
#endif
  at::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
    fn(codes, scale, dst, begin, end);
  });
}

float abs_max_cpu(const void* src, FloatKind kind, int64_t n) {
  return at::parallel_reduce(
      0, n, kGrain, 0.0f,
      [&](int64_t begin, int64_t end, float init) {
        float m = init;
        switch (kind) {
          case FloatKind::kF32: m = std::max(m, abs_max_range<FloatKind::kF32>(src, begin, end)); break;
          case FloatKind::kBF16: m = std::max(m, abs_max_range<FloatKind::kBF16>(src, begin, end)); break;
          case FloatKind::kF16: m = std::max(m, abs_max_range<FloatKind::kF16>(src, begin, end)); break;
        }
        return m;
      },
      [](float a, float b) { return std::max(a, b); });
}

}  // namespace diffusiond
