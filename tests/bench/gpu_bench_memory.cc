#include "tests/bench/gpu_bench_memory.h"

#include <stdexcept>
#include <string>

#include "kernels/fp8_codec.h"

namespace diffusiond::bench {
namespace {

// Runs of back-to-back calls per measurement, and calls per run: enough
// that a ~1 ms decode of 1 GiB outweighs the launch and the wait.
constexpr int kTrials = 3;
constexpr int kDecodeCalls = 20;
constexpr int kCopyCalls = 3;

}  // namespace

nlohmann::json fp8_decode_section(const BenchOptions& options) {
  const int64_t n = options.bytes;  // one code per byte
  const torch::TensorOptions on_device = torch::TensorOptions().device(options.device);
  const torch::Tensor codes = torch::randint(0, 256, {n}, on_device.dtype(torch::kUInt8));
  torch::Tensor decoded = torch::empty({n}, on_device.dtype(torch::kBFloat16));
  torch::Tensor copied = torch::empty({n}, on_device.dtype(torch::kUInt8));

  const double decode_s = best_seconds_per_call(options.device, kTrials, kDecodeCalls, [&] {
    ok_or_throw(fp8_decode(codes, Fp8Format::kE4M3Fn, 0.5f, decoded));
  });
  const double copy_s = best_seconds_per_call(options.device, kTrials, kDecodeCalls,
                                              [&] { copied.copy_(codes); });
  const nlohmann::json decode = throughput(decode_s, n + 2 * n);  // read codes, write bf16
  const nlohmann::json copy = throughput(copy_s, 2 * n);          // read and write the codes
  return {{"device", options.device.str()},
          {"codes_bytes", n},
          {"decode_e4m3fn_to_bf16", decode},
          {"device_copy", copy},
          {"decode_vs_copy",
           decode["gb_per_s"].get<double>() / copy["gb_per_s"].get<double>()}};
}

nlohmann::json host_to_device_section(const BenchOptions& options) {
  if (!options.device.is_cuda()) return {{"skipped", "no CUDA device"}};
  const int64_t n = options.bytes;
  const torch::TensorOptions bytes = torch::TensorOptions().dtype(torch::kUInt8);
  // Written once before timing, so that no page is first touched inside it.
  const torch::Tensor pageable = torch::empty({n}, bytes).fill_(1);
  const torch::Tensor pinned = torch::empty({n}, bytes.pinned_memory(true)).fill_(1);
  torch::Tensor on_device = torch::empty({n}, bytes.device(options.device));

  const double pinned_s = best_seconds_per_call(
      options.device, kTrials, kCopyCalls, [&] { on_device.copy_(pinned, /*non_blocking=*/true); });
  const double pageable_s = best_seconds_per_call(options.device, kTrials, kCopyCalls,
                                                  [&] { on_device.copy_(pageable); });
  const nlohmann::json from_pinned = throughput(pinned_s, n);
  const nlohmann::json from_pageable = throughput(pageable_s, n);
  return {{"device", options.device.str()},
          {"bytes", n},
          {"pinned", from_pinned},
          {"pageable", from_pageable},
          {"pinned_vs_pageable",
           from_pinned["gb_per_s"].get<double>() / from_pageable["gb_per_s"].get<double>()}};
}

}  // namespace diffusiond::bench
