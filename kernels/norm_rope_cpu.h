// Fused CPU loops for the element-wise work around a transformer block's
// matmuls: RMSNorm with its modulation and gated residual, LayerNorm with
// its modulation, and rotary embedding with the per-head q/k norm. Composed
// from libtorch ops the same work takes 4 to 9 passes over the activations
// (pow, mean, rsqrt, mul, mul, mul, add; or select, 4 muls, 2 adds, stack);
// here it takes one read to reduce and one read-write to produce. Each result equals the composed
// float32 ops' arithmetic in the same order, except that sums (of squares,
// and LayerNorm's moments, taken in two passes) are added in another order
// (float32 rounding, ~1e-7 relative).
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

#include "kernels/norm_rope_args.h"

namespace diffusiond {

// rms_norm_rows, layer_norm_rows and rope_heads (norm_rope_args.h) on the
// CPU, on ATen's thread pool.
void rms_norm_rows_cpu(const RmsNormRowsArgs& args);
void layer_norm_rows_cpu(const LayerNormRowsArgs& args);
void rope_heads_cpu(const RopeHeadsArgs& args);

}  // namespace diffusiond

#endif  // DIFFUSIOND_KERNELS_NORM_ROPE_CPU_H_
