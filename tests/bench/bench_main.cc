// The benchmarks' main: Google Benchmark's, after the BLAS check every
// diffusiond binary makes first (core/cpu/blas_kernels.h), so no figure is
// ever taken on OpenBLAS's generic fallback kernels by accident. The
// kernels in use go into the report's context ("blas").
#include <benchmark/benchmark.h>

#include "core/cpu/blas_kernels.h"

int main(int argc, char** argv) {
  const diffusiond::BlasChoice blas = diffusiond::ensure_blas_kernels(argv);
  benchmark::AddCustomContext("blas", blas.summary);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
