// Which BLAS kernels this process runs, and correcting a generic fallback.
//
// OpenBLAS built with DYNAMIC_ARCH picks its kernel set ("core") from CPUID
// when the library loads. A release that does not know the CPU falls back
// to a generic set: Debian 12's OpenBLAS 0.3.21 runs "Prescott" SSE3
// kernels on newer AVX-512 Xeons, and sgemm ~10x slower than it could,
// silently. OpenBLAS reads OPENBLAS_CORETYPE at load, before main, so the
// correction is to set it and re-exec the process (same pid, same argv)
// before any BLAS call. A coretype the user set is theirs and is kept.
#ifndef DIFFUSIOND_CORE_CPU_BLAS_KERNELS_H_
#define DIFFUSIOND_CORE_CPU_BLAS_KERNELS_H_

#include <functional>
#include <optional>
#include <string>

#include "core/cpu/cpu_features.h"

namespace diffusiond {

// What the decision reads: the seam tests fake.
struct BlasProbe {
  // OpenBLAS's chosen core ("Haswell", "Prescott", ...); empty when the
  // BLAS is not OpenBLAS.
  std::string corename;
  std::string config;  // openblas_get_config(), e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH ..."
  CpuFeatures cpu;
  std::optional<std::string> user_coretype;  // OPENBLAS_CORETYPE as the user set it
  std::optional<std::string> our_coretype;   // the coretype our own re-exec set
};

struct BlasChoice {
  std::string library;   // e.g. "OpenBLAS 0.3.21"; empty when not OpenBLAS
  std::string corename;  // the kernels in use, e.g. "Haswell"
  // Set OPENBLAS_CORETYPE to this and re-exec; empty: keep the kernels.
  std::optional<std::string> reexec_with;
  bool fallback = false;  // the kernels in use are below what the CPU runs
  // One line for the ready line and logs, e.g. "OpenBLAS 0.3.21, Zen
  // kernels (detected by OpenBLAS)".
  std::string summary;
  // How the core was chosen: "openblas", "diffusiond", "OPENBLAS_CORETYPE",
  // or "none" (not OpenBLAS).
  std::string chosen_by;
};

// The best OpenBLAS core type a CPU with `cpu` runs: "Cooperlake"
// (AVX-512 with BF16), "SkylakeX" (AVX-512), "Haswell" (AVX2 with FMA), or
// nothing (no better set than the generic ones).
std::optional<std::string> best_openblas_coretype(const CpuFeatures& cpu);

// Decides from `probe` alone (no side effects).
BlasChoice choose_blas_kernels(const BlasProbe& probe);

// Reads the process's own probe: OpenBLAS's answers through dlsym (the
// symbols libtorch's BLAS exports), CPUID, and the environment.
BlasProbe probe_blas_kernels();

// Called first thing in main, before any thread or BLAS call: when the
// choice is a re-exec, sets OPENBLAS_CORETYPE (and a guard so it happens
// once) and execs /proc/self/exe with `argv`. Returns the choice when the
// process goes on (no re-exec, or the exec failed, said in its summary).
// `probe` is the seam tests fake.
BlasChoice ensure_blas_kernels(char** argv, const std::function<BlasProbe()>& probe = probe_blas_kernels);

// The environment variable our re-exec sets to the coretype it chose.
inline constexpr char kBlasGuardVariable[] = "DIFFUSIOND_BLAS_CORETYPE";

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_CPU_BLAS_KERNELS_H_
