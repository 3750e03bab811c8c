// gpu_bench's fused-layers section: the fused norm, modulation and RoPE
// loops (core/models/common/layers.h; on a GPU kernels/cuda/norm_rope.cu)
// against the same formulas composed from libtorch ops, as upstream runs
// them, at the real models' sizes.
#ifndef DIFFUSIOND_TESTS_BENCH_GPU_BENCH_LAYERS_H_
#define DIFFUSIOND_TESTS_BENCH_GPU_BENCH_LAYERS_H_

#include <nlohmann/json.hpp>

#include "tests/bench/gpu_bench_section.h"

namespace diffusiond::bench {

// bf16, batch 1, a 1024² image's tokens: Z-Image's modulated RMSNorm, its
// gated residual and its q/k RMSNorm + RoPE + transpose (4,224 tokens,
// dim 3,840, 30 heads of 128), and FLUX's modulated LayerNorm (4,608
// tokens, dim 3,072). Each reports {"fused", "composed"} seconds per call,
// composed_vs_fused (above 1: the fused loop is faster), and the fused
// call's gb_per_s over the bytes it must move (x read, out written, plus
// the residual). A dry run takes 64 tokens of dim 256 on the CPU.
nlohmann::json fused_layers_section(const BenchOptions& options);

}  // namespace diffusiond::bench

#endif  // DIFFUSIOND_TESTS_BENCH_GPU_BENCH_LAYERS_H_
