// gpu_bench's Z-Image step sections: the mid-size model (dim 1536, 8 + 2
// layers) on a 128x128 latent (a 1024x1024 image) with 128 caption tokens
// at bfloat16, placed on the device through the VRAM tier as the daemon
// places it.
#ifndef DIFFUSIOND_TESTS_BENCH_GPU_BENCH_Z_IMAGE_H_
#define DIFFUSIOND_TESTS_BENCH_GPU_BENCH_Z_IMAGE_H_

#include <nlohmann/json.hpp>

#include "tests/bench/gpu_bench_section.h"

namespace diffusiond::bench {

// One step, fully resident: FP8 storage against bfloat16 storage; the same
// step with half the blocks streamed against fully resident; and the
// tier's streaming copy rate against a plain pinned host-to-device copy.
nlohmann::json z_image_step_section(const BenchOptions& options);

}  // namespace diffusiond::bench

#endif  // DIFFUSIOND_TESTS_BENCH_GPU_BENCH_Z_IMAGE_H_
