#include "core/cpu/cpu_features.h"

#include <string>
#include <vector>

#include "absl/strings/str_join.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace diffusiond {

CpuFeatures detect_cpu_features() {
  CpuFeatures f;
#if defined(__x86_64__)
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  // GCC 12's __builtin_cpu_supports knows neither AVX512-BF16 nor AMX:
  // CPUID leaf 7 subleaf 1 EAX bit 5, and leaf 7 subleaf 0 EDX bit 22.
  // (The OS must also enable AMX state, which only matters for using it.)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) f.avx512bf16 = f.avx512f && (eax & (1u << 5)) != 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) f.amx_bf16 = (edx & (1u << 22)) != 0;
#endif
  return f;
}

std::string describe(const CpuFeatures& f) {
  std::vector<const char*> names;
  if (f.avx2) names.push_back("avx2");
  if (f.fma) names.push_back("fma");
  if (f.avx512f) names.push_back("avx512f");
  if (f.avx512bw) names.push_back("avx512bw");
  if (f.avx512vl) names.push_back("avx512vl");
  if (f.avx512dq) names.push_back("avx512dq");
  if (f.avx512bf16) names.push_back("avx512_bf16");
  if (f.amx_bf16) names.push_back("amx_bf16");
  return names.empty() ? "baseline" : absl::StrJoin(names, " ");
}

}  // namespace diffusiond
