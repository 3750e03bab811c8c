// What a section of gpu_bench is: a named function that measures one thing
// and returns its numbers as one JSON object; and the timing every section
// shares. gpu_bench.cc lists the sections; each lives in its own file.
//
// Not here: the sections themselves, the command line and the output file.
#ifndef DIFFUSIOND_TESTS_BENCH_GPU_BENCH_SECTION_H_
#define DIFFUSIOND_TESTS_BENCH_GPU_BENCH_SECTION_H_

#include <torch/cuda.h>
#include <torch/types.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"

namespace diffusiond::bench {

// What every section is given.
struct BenchOptions {
  // Where to measure: cuda:0 on a GPU machine; the CPU in a dry run or
  // without a device, where sections run small to check they work at all.
  torch::Device device = torch::kCPU;
  // True when there is no CUDA device (or --dry-run): sizes are tiny and
  // sections that only mean something on a GPU report {"skipped": why}.
  bool dry_run = true;
  // The size of the main buffer of each section: 1 GiB on a GPU, 1 MiB in
  // a dry run (--bytes overrides).
  int64_t bytes = int64_t{1} << 20;
};

// A section: measures, returns a JSON object (numbers, or {"skipped":
// why}). May throw; gpu_bench then records {"error": what} for it, runs the
// remaining sections and exits 1.
struct Section {
  const char* name;
  nlohmann::json (*run)(const BenchOptions& options);
};

// Waits for the work queued on `device` (nothing to wait for on the CPU).
inline void synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

// Returns the fewest seconds per call of `fn` seen over `trials` runs of
// `calls` back-to-back calls, after one untimed call. The device is waited
// for around each run only, so launches overlap as they do in real use.
template <typename Fn>
double best_seconds_per_call(const torch::Device& device, int trials, int calls, Fn&& fn) {
  fn();
  synchronize(device);
  double best = std::numeric_limits<double>::infinity();
  for (int t = 0; t < trials; ++t) {
    const auto start = std::chrono::steady_clock::now();
    for (int c = 0; c < calls; ++c) fn();
    synchronize(device);
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    best = std::min(best, elapsed.count() / calls);
  }
  return best;
}

// Throws a failed status, so gpu_bench records the section's error.
inline void ok_or_throw(const absl::Status& status) {
  if (!status.ok()) throw std::runtime_error(std::string(status.message()));
}
template <typename T>
T value_or_throw(absl::StatusOr<T> value) {
  ok_or_throw(value.status());
  return std::move(*value);
}

// {"seconds": s, "bytes": b, "gb_per_s": b / s / 1e9} for one measurement.
inline nlohmann::json throughput(double seconds, int64_t bytes) {
  return {{"seconds", seconds},
          {"bytes", bytes},
          {"gb_per_s", seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0.0}};
}

}  // namespace diffusiond::bench

#endif  // DIFFUSIOND_TESTS_BENCH_GPU_BENCH_SECTION_H_
