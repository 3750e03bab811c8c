// FP8 encode/decode on the CPU: vectorisable inner loops (compiled for AVX2
// and baseline x86-64 with run-time selection) spread over all cores with
// at::parallel_for; 16-bit decodes on AVX-512BW look each code up in a
// table of the 256 results instead. The format and rounding rule are in
// fp8_format.h; the results equal fp8_encode_ref / fp8_decode_ref bit for
// bit.
//
// Not here: tensors, devices, dispatch (fp8_codec.h).
#ifndef DIFFUSIOND_KERNELS_FP8_CPU_H_
#define DIFFUSIOND_KERNELS_FP8_CPU_H_

#include <cstdint>

#include "kernels/float_kind.h"
#include "kernels/fp8_format.h"

namespace diffusiond {

// Writes code(src[i] * inv_scale) to codes[i] for i < n. `src` holds n
// elements of `kind`. Thread-safe; uses the intra-op thread pool.
void fp8_encode_cpu(const void* src, FloatKind kind, int64_t n, Fp8Format format,
                    float inv_scale, uint8_t* codes);

// Quantises src per tensor, as a scaled FP8 matmul takes its input, and
// returns the scale: scale = max(abs_max_cpu(src) / fp8_max_finite(format),
// min_scale), codes[i] = code(src[i] / scale). It divides, as
// `(x / scale).to(float8)` does, so the codes are those; the encoder
// saturates at the largest finite value, which a rounded division can pass.
float fp8_quantize_cpu(const void* src, FloatKind kind, int64_t n, Fp8Format format, float min_scale, uint8_t* codes);

// Writes decode(codes[i]) * scale to dst[i] as `kind` (rounded to nearest
// even when narrower than float32).
void fp8_decode_cpu(const uint8_t* codes, int64_t n, Fp8Format format, float scale,
                    FloatKind kind, void* dst);

// Returns max |src[i]| over finite and infinite values, ignoring NaN; 0 for
// n == 0. Used to choose a per-tensor scale.
float abs_max_cpu(const void* src, FloatKind kind, int64_t n);

}  // namespace diffusiond

#endif  // DIFFUSIOND_KERNELS_FP8_CPU_H_
