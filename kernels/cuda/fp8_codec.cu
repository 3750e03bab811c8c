#include "kernels/cuda/fp8_codec.cuh"

#include <algorithm>

#include "kernels/cuda/float_kind.cuh"

namespace diffusiond {
namespace {

constexpr int kThreads = 256;

// The same bit algorithm as the CPU encoder (see kernels/fp8_cpu.cc).
__device__ __forceinline__ uint8_t encode_bits(uint32_t bits, int mantissa_bits, int bias,
                                               uint32_t max_code, uint32_t min_normal,
                                               uint32_t magic) {
  const int shift = 23 - mantissa_bits;
  const uint32_t rebias = uint32_t(127 - bias) << 23;
  const uint32_t sign = (bits >> 24) & 0x80u;
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  const uint32_t odd = (magnitude >> shift) & 1u;
  const uint32_t normal = (magnitude + ((1u << (shift - 1)) - 1u) + odd - rebias) >> shift;
  const uint32_t subnormal =
      __float_as_uint(__fadd_rn(__uint_as_float(magnitude), __uint_as_float(magic))) - magic;
  uint32_t code = magnitude < min_normal ? subnormal : normal;
  code = code > max_code ? max_code : code;
  return static_cast<uint8_t>(magnitude > 0x7F800000u ? 0x7Fu : (code | sign));
}

__global__ void encode_kernel(const void* src, FloatKind kind, int64_t n, Fp8Params p,
                              float inv_scale, uint8_t* codes) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const float v = __fmul_rn(load_float(src, kind, i), inv_scale);
    codes[i] = encode_bits(__float_as_uint(v), p.mantissa_bits, p.exponent_bias, p.max_code,
                           p.min_normal_f32_bits, p.subnormal_magic_f32_bits);
  }
}

// max |src[i]| over the non-NaN values, as float32 bits, max'd into
// *amax_bits (zeroed before). Non-negative floats order as their bits do,
// so one integer atomic per block merges the blocks.
__global__ void abs_max_kernel(const void* src, FloatKind kind, int64_t n, unsigned* amax_bits) {
  float m = 0.0f;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    m = fmaxf(m, fabsf(load_float(src, kind, i)));  // fmaxf returns the non-NaN operand
  }
  unsigned bits = __float_as_uint(m);
  for (int offset = 16; offset > 0; offset /= 2) bits = max(bits, __shfl_xor_sync(0xFFFFFFFFu, bits, offset));
  __shared__ unsigned warp_max[kThreads / 32];
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  if (lane == 0) warp_max[warp] = bits;
  __syncthreads();
  if (warp != 0) return;
  bits = lane < kThreads / 32 ? warp_max[lane] : 0u;
  for (int offset = 16; offset > 0; offset /= 2) bits = max(bits, __shfl_xor_sync(0xFFFFFFFFu, bits, offset));
  if (lane == 0) atomicMax(amax_bits, bits);
}

// *scale holds abs_max's bits on entry and the scale on return.
__global__ void scale_from_abs_max_kernel(float* scale, float max_finite, float min_scale) {
  const float amax = __uint_as_float(*reinterpret_cast<const unsigned*>(scale));
  *scale = fmaxf(__fdiv_rn(amax, max_finite), min_scale);
}

__global__ void quantize_kernel(const void* src, FloatKind kind, int64_t n, Fp8Params p, const float* scale,
                                uint8_t* codes) {
  const float s = *scale;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const float v = __fdiv_rn(load_float(src, kind, i), s);
    codes[i] = encode_bits(__float_as_uint(v), p.mantissa_bits, p.exponent_bias, p.max_code, p.min_normal_f32_bits,
                           p.subnormal_magic_f32_bits);
  }
}

__global__ void decode_kernel(const uint8_t* codes, int64_t n, Fp8Params p, bool e4m3,
                              float scale, FloatKind kind, void* dst) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const uint32_t c = codes[i];
    const uint32_t exponent_field = (c & 0x7Fu) >> p.mantissa_bits;
    const uint32_t mantissa = c & ((1u << p.mantissa_bits) - 1u);
    const uint32_t max_field = (1u << (7 - p.mantissa_bits)) - 1u;
    float magnitude;
    if (e4m3 && exponent_field == max_field && mantissa == 7u) {
      magnitude = __int_as_float(0x7FC00000);
    } else if (!e4m3 && exponent_field == max_field) {
      magnitude = mantissa != 0 ? __int_as_float(0x7FC00000) : __int_as_float(0x7F800000);
    } else if (exponent_field == 0) {
      magnitude = ldexpf(float(mantissa), 1 - p.exponent_bias - p.mantissa_bits);
    } else {
      magnitude = ldexpf(float(mantissa + (1u << p.mantissa_bits)),
                         int(exponent_field) - p.exponent_bias - p.mantissa_bits);
    }
    const float value = (c & 0x80u) ? -magnitude : magnitude;
    store_float(dst, kind, i, __fmul_rn(value, scale));
  }
}

unsigned blocks_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535);
}

// A reduction wants few blocks (one atomic each), enough to fill the device.
unsigned reduction_blocks_for(int64_t n) { return std::min(blocks_for(n), 1024u); }

}  // namespace

cudaError_t fp8_encode_cuda(const void* src, FloatKind kind, int64_t n, Fp8Format format,
                            float inv_scale, uint8_t* codes, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  encode_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, kind, n, fp8_params(format),
                                                        inv_scale, codes);
  return cudaGetLastError();
}

cudaError_t fp8_quantize_cuda(const void* src, FloatKind kind, int64_t n, Fp8Format format, float min_scale,
                              float* scale, uint8_t* codes, cudaStream_t stream) {
  cudaError_t err = cudaMemsetAsync(scale, 0, sizeof(float), stream);
  if (err != cudaSuccess) return err;
  if (n > 0) {
    abs_max_kernel<<<reduction_blocks_for(n), kThreads, 0, stream>>>(src, kind, n, reinterpret_cast<unsigned*>(scale));
  }
  scale_from_abs_max_kernel<<<1, 1, 0, stream>>>(scale, fp8_max_finite(format), min_scale);
  if (n > 0) {
    quantize_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, kind, n, fp8_params(format), scale, codes);
  }
  return cudaGetLastError();
}

cudaError_t fp8_decode_cuda(const uint8_t* codes, int64_t n, Fp8Format format, float scale,
                            FloatKind kind, void* dst, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  decode_kernel<<<blocks_for(n), kThreads, 0, stream>>>(
      codes, n, fp8_params(format), format == Fp8Format::kE4M3Fn, scale, kind, dst);
  return cudaGetLastError();
}

}  // namespace diffusiond
