// gpu_bench's memory sections: what the FP8 decode and host-to-device
// copies cost next to the plain copies they stand in for.
#ifndef DIFFUSIOND_TESTS_BENCH_GPU_BENCH_MEMORY_H_
#define DIFFUSIOND_TESTS_BENCH_GPU_BENCH_MEMORY_H_

#include <nlohmann/json.hpp>

#include "tests/bench/gpu_bench_section.h"

namespace diffusiond::bench {

// Decodes options.bytes of e4m3fn codes to bf16 with the project's kernel
// (kernels/fp8_codec.h) and copies the same codes device to device; reports
// both as (bytes read + bytes written) per second and decode_vs_copy, their
// ratio (1.0: the decode runs at copy speed).
nlohmann::json fp8_decode_section(const BenchOptions& options);

// Copies options.bytes from pinned and from pageable host memory to the
// device; reports both and pinned_vs_pageable, their ratio. Skipped without
// a CUDA device.
nlohmann::json host_to_device_section(const BenchOptions& options);

}  // namespace diffusiond::bench

#endif  // DIFFUSIOND_TESTS_BENCH_GPU_BENCH_MEMORY_H_
