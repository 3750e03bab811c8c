// The one place for libtorch-version and CPU/CUDA differences outside
// kernels/*.cu (libtorch 1.13 CPU from Debian; CUDA libtorch 2.x on GPUs).
//
// DIFFUSIOND_HAVE_CUDA is defined to 1 by the build when the Torch found has
// CUDA and the CUDA kernels are linked.
#ifndef DIFFUSIOND_KERNELS_TORCH_COMPAT_H_
#define DIFFUSIOND_KERNELS_TORCH_COMPAT_H_

#include <ATen/Parallel.h>
#include <c10/core/Allocator.h>
#include <dlfcn.h>
#include <torch/types.h>
#include <torch/version.h>

#include <optional>

#if defined(DIFFUSIOND_HAVE_CUDA) && DIFFUSIOND_HAVE_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

// Marks a CPU kernel compiled once per x86-64 level (AVX-512, AVX2, the
// baseline) and chosen when the binary is loaded, through an ifunc. Sanitizer
// builds compile the baseline only: the dynamic linker runs ifunc resolvers
// before the sanitizer's runtime is initialised, and an instrumented resolver
// (ThreadSanitizer's) crashes there, before main. Clang (the fuzz build)
// cannot clone templates, so it builds the baseline too.
#if defined(__x86_64__) && !defined(DIFFUSIOND_SANITIZER_BUILD) && !defined(__clang__)
#define DIFFUSIOND_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define DIFFUSIOND_CPU_CLONES
#endif

namespace diffusiond::compat {

// True when this binary can run kernels on CUDA tensors.
inline constexpr bool kHaveCuda =
#if defined(DIFFUSIOND_HAVE_CUDA) && DIFFUSIOND_HAVE_CUDA
    true;
#else
    false;
#endif

// libtorch >= 2.0 ships scaled_dot_product_attention; 1.13 does not.
inline constexpr bool kHaveSdpa = TORCH_VERSION_MAJOR >= 2;

// Runs libtorch's native scaled_dot_product_attention (libtorch >= 2.0;
// `mask` is boolean, true = attend, or undefined). Returns nothing on
// libtorch 1.13, which lacks it; callers then use their own kernel.
inline std::optional<torch::Tensor> native_sdpa(const torch::Tensor& q, const torch::Tensor& k,
                                                const torch::Tensor& v, const torch::Tensor& mask) {
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(
      q, k, v, mask.defined() ? c10::optional<at::Tensor>(mask) : c10::nullopt);
#else
  (void)q, (void)k, (void)v, (void)mask;
  return std::nullopt;
#endif
}

// Sets the threads one forward may use: libtorch's intra-op pool and, where
// libtorch calls a BLAS that keeps a pool of its own (Debian's libtorch and
// OpenBLAS), that pool too. Without the second, `--threads 1` still ran
// every matmul on all cores. Looked up at run time: which BLAS libtorch
// reaches is the distribution's choice, not this build's.
inline void set_compute_threads(int threads) {
  at::set_num_threads(threads);
  using SetThreads = void (*)(int);
  for (const char* symbol : {"openblas_set_num_threads", "mkl_set_num_threads"}) {
    if (void* f = dlsym(RTLD_DEFAULT, symbol)) reinterpret_cast<SetThreads>(f)(threads);
  }
}

// Whose threads run the matmuls of the BLAS libtorch calls: "openmp"
// (libtorch's own pool), "pthreads" (a pool of its own, which contends with
// libtorch's between a matmul and the element-wise work around it),
// "sequential", or "unknown" for a BLAS that does not say (MKL, cuBLAS).
inline const char* blas_threading() {
  using GetParallel = int (*)();
  if (void* f = dlsym(RTLD_DEFAULT, "openblas_get_parallel")) {
    switch (reinterpret_cast<GetParallel>(f)()) {
      case 0: return "sequential";
      case 1: return "pthreads";
      case 2: return "openmp";
    }
  }
  return "unknown";
}

#if defined(DIFFUSIOND_HAVE_CUDA) && DIFFUSIOND_HAVE_CUDA
// Returns the stream kernels should use on `device` when none is given.
inline void* current_cuda_stream(const c10::Device& device) {
  return c10::cuda::getCurrentCUDAStream(device.index()).stream();
}
#endif

// Returns the compute capability of CUDA device `index` as 10 * major +
// minor (90 for sm_90), or 0 in a build without CUDA or when the runtime
// cannot say.
inline int cuda_compute_capability(int index) {
#if defined(DIFFUSIOND_HAVE_CUDA) && DIFFUSIOND_HAVE_CUDA
  int major = 0;
  int minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, index) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, index) != cudaSuccess) {
    return 0;
  }
  return 10 * major + minor;
#else
  (void)index;
  return 0;
#endif
}

// The bytes libtorch's CUDA caching allocator held reserved on device
// `index` at its fullest since the last reset_cuda_allocator_peak (what it
// took from the driver, cached blocks included: what the device lost to
// it). 0 in a build without CUDA. Index 0 of the stat arrays is the
// aggregate over the pools in every libtorch 2.x.
inline int64_t cuda_allocator_peak_reserved(int index) {
#if defined(DIFFUSIOND_HAVE_CUDA) && DIFFUSIOND_HAVE_CUDA
  return c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(index)).reserved_bytes[0].peak;
#else
  (void)index;
  return 0;
#endif
}

inline void reset_cuda_allocator_peak(int index) {
#if defined(DIFFUSIOND_HAVE_CUDA) && DIFFUSIOND_HAVE_CUDA
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(index));
#else
  (void)index;
#endif
}

// at::_scaled_mm with tensor-wise scales, as scaled_mm_e4m3fn calls it:
// libtorch >= 2.5 built with CUDA. 2.1-2.4 had another signature (optional
// scales, an (out, amax) pair) and count as lacking it; 1.13 has no FP8
// dtypes at all.
#if defined(DIFFUSIOND_HAVE_CUDA) && DIFFUSIOND_HAVE_CUDA && \
    (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5))
#define DIFFUSIOND_COMPAT_SCALED_MM 1
#else
#define DIFFUSIOND_COMPAT_SCALED_MM 0
#endif
inline constexpr bool kHaveScaledMm = DIFFUSIOND_COMPAT_SCALED_MM;

// Returns (a_codes as e4m3fn) @ (b_codes as e4m3fn)^T * scale_a * scale_b
// (+ bias) as `out_dtype`, through at::_scaled_mm; nothing where
// kHaveScaledMm is false. Throws c10::Error where libtorch refuses.
// REQUIRES: a_codes: contiguous uint8 e4m3fn codes [m, k]; b_codes:
// contiguous uint8 e4m3fn codes [n, k] (a row-major weight, which
// _scaled_mm gets as the column-major [k, n] it wants); scales: float32
// one-element tensors; bias: undefined, or [n] of out_dtype, which must
// then be bf16 or fp16; all on one CUDA device; k and n multiples of 16.
inline std::optional<torch::Tensor> scaled_mm_e4m3fn(const torch::Tensor& a_codes, const torch::Tensor& b_codes,
                                                     const torch::Tensor& scale_a, const torch::Tensor& scale_b,
                                                     const torch::Tensor& bias, torch::ScalarType out_dtype,
                                                     bool use_fast_accum) {
#if DIFFUSIOND_COMPAT_SCALED_MM
  const torch::Tensor a8 = a_codes.view(at::kFloat8_e4m3fn);
  const torch::Tensor b8 = b_codes.view(at::kFloat8_e4m3fn).t();
  return at::_scaled_mm(a8, b8, scale_a, scale_b,
                        bias.defined() ? std::optional<at::Tensor>(bias) : std::nullopt,
                        /*scale_result=*/std::nullopt, out_dtype, use_fast_accum);
#else
  (void)a_codes, (void)b_codes, (void)scale_a, (void)scale_b, (void)bias, (void)out_dtype, (void)use_fast_accum;
  return std::nullopt;
#endif
}

// A c10::Allocator written once for both interfaces: libtorch 2.3 made
// allocate() non-const and added the pure copy_data(). Subclasses implement
// allocate_data().
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
class Allocator : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t bytes) override { return allocate_data(bytes); }
  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }

 protected:
  virtual c10::DataPtr allocate_data(size_t bytes) const = 0;
};
#else
class Allocator : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t bytes) const override { return allocate_data(bytes); }

 protected:
  virtual c10::DataPtr allocate_data(size_t bytes) const = 0;
};
#endif

}  // namespace diffusiond::compat

#endif  // DIFFUSIOND_KERNELS_TORCH_COMPAT_H_
