#include "kernels/cuda/swiglu.cuh"

#include <algorithm>

#include "kernels/cuda/float_kind.cuh"

namespace diffusiond {
namespace {

constexpr int kThreads = 256;
// gridDim.x is limited to 2^31 - 1; more work than this loops over the grid.
constexpr int64_t kMaxBlocks = int64_t{1} << 30;

// libtorch's formula for silu (x / (1 + exp(-x))), times y, all in float32;
// the caller rounds once to the activations' kind, where the composed ops
// round silu(x) to it before the product too.
__device__ __forceinline__ float silu_times(float x, float y) { return (x / (1.0f + expf(-x))) * y; }

// Each thread takes 16 bytes of a and of b at a time (8 bf16/fp16 or 4
// float32 elements), the widest load a thread issues; the memory-bound
// pass then reaches the device's bandwidth where per-element loads of
// 2 bytes would not. REQUIRES: a and b 16-byte aligned.
template <FloatKind kKind>
__global__ void silu_mul_vector_kernel(void* a, const void* b, int64_t vectors) {
  constexpr int kElements = kKind == FloatKind::kF32 ? 4 : 8;
  for (int64_t v = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; v < vectors; v += int64_t{gridDim.x} * blockDim.x) {
    uint4 x = static_cast<const uint4*>(a)[v];
    const uint4 y = static_cast<const uint4*>(b)[v];
#pragma unroll
    for (int j = 0; j < kElements; ++j)
      store_float(&x, kKind, j, silu_times(load_float(&x, kKind, j), load_float(&y, kKind, j)));
    static_cast<uint4*>(a)[v] = x;
  }
}

// Elements [first, n) one at a time: the tail after the vectors, or every
// element of unaligned arrays.
__global__ void silu_mul_kernel(FloatKind kind, void* a, const void* b, int64_t first, int64_t n) {
  for (int64_t i = first + blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    store_float(a, kind, i, silu_times(load_float(a, kind, i), load_float(b, kind, i)));
  }
}

unsigned blocks_for(int64_t units) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min((units + kThreads - 1) / kThreads, kMaxBlocks)));
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

cudaError_t silu_mul_cuda(FloatKind kind, void* a, const void* b, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  int64_t first = 0;
  if (aligned16(a) && aligned16(b)) {
    const int64_t per_vector = 16 / float_kind_bytes(kind), vectors = n / per_vector;
    if (vectors > 0) {
      switch (kind) {
        case FloatKind::kF32:
          silu_mul_vector_kernel<FloatKind::kF32><<<blocks_for(vectors), kThreads, 0, stream>>>(a, b, vectors);
          break;
        case FloatKind::kBF16:
          silu_mul_vector_kernel<FloatKind::kBF16><<<blocks_for(vectors), kThreads, 0, stream>>>(a, b, vectors);
          break;
        case FloatKind::kF16:
          silu_mul_vector_kernel<FloatKind::kF16><<<blocks_for(vectors), kThreads, 0, stream>>>(a, b, vectors);
          break;
      }
      if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
    }
    first = vectors * per_vector;
  }
  if (first < n) silu_mul_kernel<<<blocks_for(n - first), kThreads, 0, stream>>>(kind, a, b, first, n);
  return cudaGetLastError();
}

}  // namespace diffusiond
