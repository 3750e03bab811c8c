// The merged form of an attached adapter set: W' = W + Σ weight · scale ·
// B·A for one weight of the set's model — what the sidecar product equals,
// for checks against a reference and for merging adapters into a copy of a
// model's weights. The model's own weight is not changed.
//
// Not here: applying adapters during a forward (adapter_set.h).
#ifndef DIFFUSIOND_CORE_LORA_MERGED_WEIGHT_H_
#define DIFFUSIOND_CORE_LORA_MERGED_WEIGHT_H_

#include <torch/types.h>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/lora/adapter_set.h"

namespace diffusiond {

// Returns a fresh CPU tensor W' at `dtype` for the weight `name` of the
// set's model (an FP8 weight decoded first): the sum is formed at twice the
// precision of `dtype` (float64 for float32 and float64, else float32), then
// rounded once. A copy of the weight when the set has no term for it.
// NOT_FOUND when the model holds no weight `name`.
absl::StatusOr<torch::Tensor> merged_weight(const AdapterSet& set, absl::string_view name, torch::ScalarType dtype);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_LORA_MERGED_WEIGHT_H_
