// Child of blas_kernels_test: runs ensure_blas_kernels over a fake probe of
// an AVX-512 BF16 CPU on which "OpenBLAS" falls back to Prescott unless
// OPENBLAS_CORETYPE is set (then it runs what the variable names, as
// OpenBLAS does when it loads). Prints its pid before the decision and the
// choice and its arguments after, so the test sees one re-exec of the same
// process with the same argv.
//
// Usage: blas_reexec_child ARGS...
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "core/cpu/blas_kernels.h"

int main(int argc, char** argv) {
  using namespace diffusiond;
  std::printf("start pid=%d\n", static_cast<int>(::getpid()));
  std::fflush(stdout);  // the exec replaces the image and its buffers
  const BlasChoice choice = ensure_blas_kernels(argv, [] {
    BlasProbe probe;
    const char* forced = std::getenv("OPENBLAS_CORETYPE");
    probe.corename = forced != nullptr ? forced : "Prescott";
    probe.config = "OpenBLAS 0.3.21 DYNAMIC_ARCH";
    probe.cpu.avx2 = probe.cpu.fma = true;
    probe.cpu.avx512f = probe.cpu.avx512bw = probe.cpu.avx512vl = probe.cpu.avx512dq = probe.cpu.avx512bf16 = true;
    if (const char* ours = std::getenv(kBlasGuardVariable)) {
      probe.our_coretype = ours;
    } else if (forced != nullptr) {
      probe.user_coretype = forced;
    }
    return probe;
  });
  std::printf("chosen_by=%s fallback=%d\n", choice.chosen_by.c_str(), choice.fallback ? 1 : 0);
  std::printf("summary=%s\n", choice.summary.c_str());
  for (int i = 1; i < argc; ++i) std::printf("arg=%s\n", argv[i]);
  return 0;
}
