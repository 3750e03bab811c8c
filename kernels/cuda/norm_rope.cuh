// The fused norm and RoPE loops (kernels/norm_rope_args.h) on a CUDA device:
// the same formulas, in the same order of float32 operations, as the CPU
// loops (kernels/norm_rope_cpu.h), except that a row's sums (of squares, of
// the values and their squared deviations) are tree reductions across
// threads (float32 rounding, ~1e-7 relative). The
// rotation without a norm is the CPU's bit for bit. The host dispatches here
// through kernels/norm_rope.h.
//
// Every pointer is device memory; work is enqueued on `stream` and is
// asynchronous. Each returns the launch error.
#ifndef DIFFUSIOND_KERNELS_CUDA_NORM_ROPE_CUH_
#define DIFFUSIOND_KERNELS_CUDA_NORM_ROPE_CUH_

#include <cuda_runtime_api.h>

#include "kernels/norm_rope_args.h"

namespace diffusiond {

cudaError_t rms_norm_rows_cuda(const RmsNormRowsArgs& args, cudaStream_t stream);
cudaError_t layer_norm_rows_cuda(const LayerNormRowsArgs& args, cudaStream_t stream);
cudaError_t rope_heads_cuda(const RopeHeadsArgs& args, cudaStream_t stream);

}  // namespace diffusiond

#endif  // DIFFUSIOND_KERNELS_CUDA_NORM_ROPE_CUH_
