#include "kernels/cuda/norm_rope.cuh"

#include <algorithm>

#include "kernels/cuda/float_kind.cuh"

// Built with --fmad=false (kernels/CMakeLists.txt): no product is contracted
// into an FMA, so each product and sum rounds as the CPU loops' do (they
// are compiled with -ffp-contract=off).

namespace diffusiond {
namespace {

constexpr int kRowThreads = 256;
constexpr int kWarp = 32;
constexpr int kRopeWarpsPerBlock = 4;
// gridDim.x is limited to 2^31 - 1; more rows than this loop over the grid.
constexpr int64_t kMaxBlocks = int64_t{1} << 30;

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xFFFFFFFFu, v, offset);
  return v;
}

// The sum of `v` over the block's threads, returned to every thread. The
// __syncthreads inside also orders every thread's earlier reads before any
// later write, which the in-place rows rely on.
__device__ float block_sum(float v) {
  __shared__ float partial[kRowThreads / kWarp];
  __shared__ float total;
  v = warp_sum(v);
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kRowThreads / kWarp ? partial[lane] : 0.0f;
    v = warp_sum(v);
    if (lane == 0) total = v;
  }
  __syncthreads();
  const float sum = total;
  // `partial` and `total` are reused by the block's next row.
  __syncthreads();
  return sum;
}

// 1 / sqrt(sum / n + eps): an RMS norm's factor from a sum of squares, and
// LayerNorm's from a sum of squared deviations.
__device__ __forceinline__ float inverse_rms(float sum_of_squares, int64_t n, float eps) {
  return 1.0f / sqrtf(sum_of_squares / static_cast<float>(n) + eps);
}

// One block per row. Each thread reads its elements of x for the sum of
// squares, then reads them (and the residual) again to write the row: out
// may alias x or the residual, and every read of the row precedes the
// block_sum barrier or reads the element the thread itself then writes.
__global__ void rms_norm_rows_kernel(RmsNormRowsArgs a) {
  for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const int64_t base = row * a.dim;
    float squares = 0.0f;
    for (int64_t i = threadIdx.x; i < a.dim; i += blockDim.x) {
      const float v = load_float(a.x, a.kind, base + i);
      squares += v * v;
    }
    const float r = inverse_rms(block_sum(squares), a.dim, a.eps);
    const int64_t group = (row / a.rows_per_group) * a.dim;
    for (int64_t i = threadIdx.x; i < a.dim; i += blockDim.x) {
      float v = (load_float(a.x, a.kind, base + i) * r) * a.weight[i];
      if (a.scale != nullptr) v *= a.scale[group + i];
      if (a.gate != nullptr) v = a.gate[group + i] * v;
      if (a.residual != nullptr) v = load_float(a.residual, a.kind, base + i) + v;
      store_float(a.out, a.kind, base + i, v);
    }
  }
}

// One block per row, as rms_norm_rows_kernel: the mean, then the variance
// about it (two passes, as the CPU loop takes them), then the row.
__global__ void layer_norm_rows_kernel(LayerNormRowsArgs a) {
  for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const int64_t base = row * a.dim;
    float total = 0.0f;
    for (int64_t i = threadIdx.x; i < a.dim; i += blockDim.x) total += load_float(a.x, a.kind, base + i);
    const float mean = block_sum(total) / static_cast<float>(a.dim);
    float deviations = 0.0f;
    for (int64_t i = threadIdx.x; i < a.dim; i += blockDim.x) {
      const float d = load_float(a.x, a.kind, base + i) - mean;
      deviations += d * d;
    }
    const float r = inverse_rms(block_sum(deviations), a.dim, a.eps);
    const int64_t group = (row / a.rows_per_group) * a.dim;
    for (int64_t i = threadIdx.x; i < a.dim; i += blockDim.x) {
      float v = (load_float(a.x, a.kind, base + i) - mean) * r;
      if (a.scale != nullptr) v = v * (1.0f + a.scale[group + i]);
      if (a.shift != nullptr) v = v + a.shift[group + i];
      store_float(a.out, a.kind, base + i, v);
    }
  }
}

// One warp per head vector (b, s, h) of x, in the input's order; lane l
// takes the pairs j = l, l + 32, ... The vector is read twice when normed
// (the sum of squares, then the rotation), from L1 the second time.
__global__ void rope_heads_kernel(RopeHeadsArgs a) {
  const int64_t rows = a.batch * a.seq * a.heads, half = a.dim / 2;
  const int lane = threadIdx.x % kWarp;
  const int64_t first = int64_t{blockIdx.x} * kRopeWarpsPerBlock + threadIdx.x / kWarp;
  for (int64_t row = first; row < rows; row += int64_t{gridDim.x} * kRopeWarpsPerBlock) {
    const int64_t h = row % a.heads, bs = row / a.heads, s = bs % a.seq, b = bs / a.seq;
    const int64_t in = row * a.dim, out = ((b * a.heads + h) * a.seq + s) * a.dim;
    float r = 1.0f;
    if (a.norm_weight != nullptr) {
      float squares = 0.0f;
      for (int64_t i = lane; i < a.dim; i += kWarp) {
        const float v = load_float(a.x, a.kind, in + i);
        squares += v * v;
      }
      r = inverse_rms(warp_sum(squares), a.dim, a.eps);
    }
    const float* c = a.cos + bs * half;
    const float* sn = a.sin + bs * half;
    for (int64_t j = lane; j < half; j += kWarp) {
      float e = load_float(a.x, a.kind, in + 2 * j), o = load_float(a.x, a.kind, in + 2 * j + 1);
      if (a.norm_weight != nullptr) {
        e = (e * r) * a.norm_weight[2 * j];
        o = (o * r) * a.norm_weight[2 * j + 1];
      }
      store_float(a.out, a.kind, out + 2 * j, e * c[j] - o * sn[j]);
      store_float(a.out, a.kind, out + 2 * j + 1, e * sn[j] + o * c[j]);
    }
  }
}

unsigned blocks_for(int64_t units) { return static_cast<unsigned>(std::max<int64_t>(1, std::min(units, kMaxBlocks))); }

}  // namespace

cudaError_t rms_norm_rows_cuda(const RmsNormRowsArgs& args, cudaStream_t stream) {
  if (args.rows <= 0 || args.dim <= 0) return cudaSuccess;
  rms_norm_rows_kernel<<<blocks_for(args.rows), kRowThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

cudaError_t layer_norm_rows_cuda(const LayerNormRowsArgs& args, cudaStream_t stream) {
  if (args.rows <= 0 || args.dim <= 0) return cudaSuccess;
  layer_norm_rows_kernel<<<blocks_for(args.rows), kRowThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

cudaError_t rope_heads_cuda(const RopeHeadsArgs& args, cudaStream_t stream) {
  const int64_t rows = args.batch * args.seq * args.heads;
  if (rows <= 0 || args.dim <= 0) return cudaSuccess;
  const int64_t blocks = (rows + kRopeWarpsPerBlock - 1) / kRopeWarpsPerBlock;
  rope_heads_kernel<<<blocks_for(blocks), kRopeWarpsPerBlock * kWarp, 0, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace diffusiond
