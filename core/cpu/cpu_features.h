// The x86-64 instruction-set features that decide which math kernels a CPU
// can run: what OpenBLAS should have chosen (blas_kernels.h) and, later,
// whether bf16 matmuls are native.
#ifndef DIFFUSIOND_CORE_CPU_CPU_FEATURES_H_
#define DIFFUSIOND_CORE_CPU_CPU_FEATURES_H_

#include <string>

namespace diffusiond {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512bf16 = false;
  bool amx_bf16 = false;

  // AVX-512 as OpenBLAS's SkylakeX kernels need it (F, BW, VL, DQ).
  bool avx512() const { return avx512f && avx512bw && avx512vl && avx512dq; }
};

// The features of the CPU this process runs on (CPUID, as the compiler's
// runtime reads it; all false off x86-64).
CpuFeatures detect_cpu_features();

// "avx2 fma avx512f ..." for logs; "baseline" when none.
std::string describe(const CpuFeatures& features);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_CPU_CPU_FEATURES_H_
