// Reading and writing one element of a FloatKind array as float32 in a CUDA
// kernel: the device side's one home of the bf16 and fp16 conversions
// (kernels/float_kind_cpu.h is the CPU's). Widening is exact; narrowing
// rounds to nearest-even, as the CPU kernels and libtorch's casts do.
#ifndef DIFFUSIOND_KERNELS_CUDA_FLOAT_KIND_CUH_
#define DIFFUSIOND_KERNELS_CUDA_FLOAT_KIND_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/float_kind.h"

namespace diffusiond {

__device__ __forceinline__ float load_float(const void* src, FloatKind kind, int64_t i) {
  switch (kind) {
    case FloatKind::kF32:
      return static_cast<const float*>(src)[i];
    case FloatKind::kBF16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(src)[i]);
    default:
      return __half2float(static_cast<const __half*>(src)[i]);
  }
}

__device__ __forceinline__ void store_float(void* dst, FloatKind kind, int64_t i, float v) {
  switch (kind) {
    case FloatKind::kF32:
      static_cast<float*>(dst)[i] = v;
      break;
    case FloatKind::kBF16:
      static_cast<__nv_bfloat16*>(dst)[i] = __float2bfloat16_rn(v);
      break;
    default:
      static_cast<__half*>(dst)[i] = __float2half_rn(v);
      break;
  }
}

}  // namespace diffusiond

#endif  // DIFFUSIOND_KERNELS_CUDA_FLOAT_KIND_CUH_
