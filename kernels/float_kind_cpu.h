// Reading and writing one element of a FloatKind array as float32 on the
// CPU, inline and branch-free so that the loops calling them vectorise. The
// one home of the bf16 and fp16 conversions the CPU kernels share (the FP8
// codec, the fused norm and RoPE loops).
#ifndef DIFFUSIOND_KERNELS_FLOAT_KIND_CPU_H_
#define DIFFUSIOND_KERNELS_FLOAT_KIND_CPU_H_

#include <c10/util/Half.h>

#include <cstdint>
#include <cstring>

#include "kernels/float_kind.h"

namespace diffusiond {

// Element i of `src` (of kKind) as float32; widening is exact.
template <FloatKind kKind>
inline float load_float(const void* src, int64_t i) {
  if constexpr (kKind == FloatKind::kF32) {
    return static_cast<const float*>(src)[i];
  } else if constexpr (kKind == FloatKind::kBF16) {
    // bfloat16 is the top half of a float32.
    const uint32_t u = uint32_t{static_cast<const uint16_t*>(src)[i]} << 16;
    float f;
    std::memcpy(&f, &u, sizeof(f));
    return f;
  } else {
    return c10::detail::fp16_ieee_to_fp32_value(static_cast<const uint16_t*>(src)[i]);
  }
}

// Writes `v` to element i of `dst` (of kKind), rounded to nearest even when
// narrower: equal to libtorch's `.to(dtype)`.
template <FloatKind kKind>
inline void store_float(void* dst, int64_t i, float v) {
  if constexpr (kKind == FloatKind::kF32) {
    static_cast<float*>(dst)[i] = v;
  } else if constexpr (kKind == FloatKind::kBF16) {
    // Round to nearest even as c10::BFloat16 does, NaN to 0x7FC0, without
    // its branch so the loop vectorises.
    uint32_t u;
    std::memcpy(&u, &v, sizeof(u));
    const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
    const uint32_t is_nan = 0u - uint32_t((u & 0x7FFFFFFFu) > 0x7F800000u);
    static_cast<uint16_t*>(dst)[i] = static_cast<uint16_t>((0x7FC0u & is_nan) | (rounded & ~is_nan));
  } else {
    static_cast<c10::Half*>(dst)[i] = c10::Half(v);
  }
}

}  // namespace diffusiond

#endif  // DIFFUSIOND_KERNELS_FLOAT_KIND_CPU_H_
