// Fused CPU loops for the element-wise work around a transformer block's
// matmuls: RMSNorm with its modulation and gated residual, and rotary
// embedding with the per-head q/k norm. Composed from libtorch ops the same
// work takes 4 to 9 passes over the activations (pow, mean, rsqrt, mul, mul,
// mul, add; or select, 4 muls, 2 adds, stack); here it takes one read to
// reduce and one read-write to produce. Each result equals the composed
// float32 ops' arithmetic in the same order, except that sums of squares are
// added in another order (float32 rounding, ~1e-7 relative).
//
// Activations (x, residual, out) are float32 or bfloat16. bfloat16 rows are
// widened into float32, computed exactly as float32 rows are, and rounded
// once to nearest-even at the end: under bf16 compute the norms and RoPE
// stay float32 inside, where composed bf16 ops would round after every op
// and convert the whole tensor to float32 and back on the way.
//
// Not here: tensors, dtypes, devices (core/models/common/layers.h decides
// when these apply and falls back to libtorch ops otherwise).
#ifndef DIFFUSIOND_KERNELS_NORM_ROPE_CPU_H_
#define DIFFUSIOND_KERNELS_NORM_ROPE_CPU_H_

#include <cstdint>

#include "kernels/float_kind.h"

namespace diffusiond {

// For each row r of x [rows, dim]:
//   n = (x[r] * rsqrt(mean(x[r]^2) + eps)) * weight
//   n *= scale[g]            if scale   (g = r / rows_per_group)
//   n  = gate[g] * n         if gate
//   n  = residual[r] + n     if residual
// and writes n to out[r]. scale and gate are [groups, dim]; residual and out
// are [rows, dim]. out may alias x or residual. All contiguous; x, residual
// and out of `kind` (kF32 or kBF16), weight, scale and gate float32.
struct RmsNormRowsArgs {
  FloatKind kind = FloatKind::kF32;
  const void* x = nullptr;
  int64_t rows = 0, dim = 0;
  const float* weight = nullptr;
  float eps = 0;
  const float* scale = nullptr;
  const float* gate = nullptr;
  const void* residual = nullptr;
  int64_t rows_per_group = 1;
  void* out = nullptr;
};
void rms_norm_rows_cpu(const RmsNormRowsArgs& args);

// For x [batch, seq, heads, dim] (dim even): optionally RMSNorm over dim
// with norm_weight (as rms_norm_rows_cpu), then rotates each interleaved
// pair (2j, 2j+1) by the angle whose cos/sin are [batch, seq, dim/2]:
//   (e, o) -> (e*c - o*s, e*s + o*c)
// and writes the result transposed to out [batch, heads, seq, dim], the
// layout attention multiplies. x and out of `kind` (kF32 or kBF16); the
// norm weight, cos and sin float32.
struct RopeHeadsArgs {
  FloatKind kind = FloatKind::kF32;
  const void* x = nullptr;
  int64_t batch = 0, seq = 0, heads = 0, dim = 0;
  const float* norm_weight = nullptr;
  float eps = 0;
  const float* cos = nullptr;
  const float* sin = nullptr;
  void* out = nullptr;
};
void rope_heads_cpu(const RopeHeadsArgs& args);

}  // namespace diffusiond

#endif  // DIFFUSIOND_KERNELS_NORM_ROPE_CPU_H_
