// Drawing a parameter table's random weights into a bf16 .safetensors file,
// the way the reference fixtures draw theirs, for any architecture's
// random-model writer.
//
// Not here: configs or folder layouts (one <arch>_random.h per
// architecture).
#ifndef DIFFUSIOND_TOOLS_RANDOM_MODELS_RANDOM_WEIGHTS_H_
#define DIFFUSIOND_TOOLS_RANDOM_MODELS_RANDOM_WEIGHTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/models/param_table.h"

namespace diffusiond {

// Writes every parameter of `table`, in table order, to `path` as bf16:
// Linear weights N(0, clamp(0.6/√fan_in, 0.02, 0.1)²), biases N(0, 0.05²),
// norm weights N(1, 0.15²), bare parameters N(0, 0.5²), drawn from one
// CPU generator seeded with `seed`. Tensors are generated one at a time, so
// memory stays at the largest tensor. UNAVAILABLE if the file cannot be
// written.
absl::Status write_random_bf16_weights(const std::vector<ParamSpec>& table, const std::string& path,
                                       uint64_t seed);

}  // namespace diffusiond

#endif  // DIFFUSIOND_TOOLS_RANDOM_MODELS_RANDOM_WEIGHTS_H_
