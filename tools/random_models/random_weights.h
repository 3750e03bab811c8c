// Random weights for a parameter table, written as a bf16 .safetensors file
// the way the reference fixtures draw them, and small text files: what every
// random-model writer shares.
#ifndef DIFFUSIOND_TOOLS_RANDOM_MODELS_RANDOM_WEIGHTS_H_
#define DIFFUSIOND_TOOLS_RANDOM_MODELS_RANDOM_WEIGHTS_H_

#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/models/param_table.h"

namespace diffusiond {

// Writes every parameter of `table` to `path` (bf16, in table order) with
// values drawn from `seed`: layer weights N(0, clamp(0.6/√fan_in, 0.02,
// 0.1)²) where fan_in is the last dimension, biases N(0, 0.05²), norm
// weights N(1, 0.15²), bare tensors N(0, 0.5²). One tensor at a time, so
// memory stays at the largest. UNAVAILABLE if it cannot be written.
// On another `device` than the CPU the values are drawn there, from its
// generator seeded with `seed` (other values than the CPU's, as fast as the
// device makes them): what lets a benchmark write a real-size model.
absl::Status write_random_weights(const std::string& path, const std::vector<ParamSpec>& table, uint64_t seed,
                                  const torch::Device& device = torch::kCPU);

// Writes `text` to `path`, creating its folder. UNAVAILABLE on failure.
absl::Status write_text_file(const std::string& path, const std::string& text);

}  // namespace diffusiond

#endif  // DIFFUSIOND_TOOLS_RANDOM_MODELS_RANDOM_WEIGHTS_H_
