// The arguments of the fused norm and RoPE loops, shared by their CPU
// (norm_rope_cpu.h) and CUDA (cuda/norm_rope.cuh) forms and the dispatch
// between them (norm_rope.h). Plain pointers and sizes, no libtorch types,
// so CUDA sources can include it. Every pointer is memory of the device the
// loop runs on.
#ifndef DIFFUSIOND_KERNELS_NORM_ROPE_ARGS_H_
#define DIFFUSIOND_KERNELS_NORM_ROPE_ARGS_H_

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

// For each row r of x [rows, dim], LayerNorm without affine, modulated:
//   n = (x[r] - mean(x[r])) * rsqrt(var(x[r]) + eps)   (biased variance)
//   n  = n * (1 + scale[g])  if scale   (g = r / rows_per_group)
//   n  = n + shift[g]        if shift
// and writes n to out[r]. scale and shift are [groups, dim]; out is [rows,
// dim] and may alias x. All contiguous; x and out of `kind` (kF32 or
// kBF16), scale and shift float32.
struct LayerNormRowsArgs {
  FloatKind kind = FloatKind::kF32;
  const void* x = nullptr;
  int64_t rows = 0, dim = 0;
  float eps = 0;
  const float* scale = nullptr;
  const float* shift = nullptr;
  int64_t rows_per_group = 1;
  void* out = nullptr;
};

// For x [batch, seq, heads, dim] (dim even): optionally RMSNorm over dim
// with norm_weight (as RmsNormRowsArgs), then rotates each interleaved
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

}  // namespace diffusiond

#endif  // DIFFUSIOND_KERNELS_NORM_ROPE_ARGS_H_
