// Conditioning: what a denoiser is conditioned on, as named tensors plus
// named scalars — Z-Image's caption features, FLUX's T5 sequence, CLIP
// pooled vector and distilled guidance — so a new architecture needs no new
// API field. Each architecture declares its inputs as ConditioningInputs
// and validates what it is given (DiffusionModel::flow_predictor).
#ifndef DIFFUSIOND_CORE_MODELS_CONDITIONING_H_
#define DIFFUSIOND_CORE_MODELS_CONDITIONING_H_

#include <torch/types.h>

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/models/model.h"

namespace diffusiond {

struct Conditioning {
  NamedTensors tensors;
  std::map<std::string, double> scalars;

  bool empty() const { return tensors.empty() && scalars.empty(); }
};

// One input an architecture reads from a Conditioning.
struct ConditioningInput {
  enum class Kind { kTensor, kScalar };
  std::string name;
  Kind kind = Kind::kTensor;
  // Tensors: the dimensions, -1 for any positive size (e.g. {-1, 2560} is
  // [L, 2560]).
  std::vector<int64_t> shape;
  bool required = true;
  double default_value = 0;  // scalars that are not required
  std::string meaning;       // one line, for errors and docs
};

// Checks `given` against `inputs` and returns every problem in one
// INVALID_ARGUMENT — missing required inputs, unknown names, tensors of the
// wrong rank, size or type (floating point), non-finite scalars — each
// prefixed with `what` ("positive conditioning"). OK when all is well.
absl::Status check_conditioning(const Conditioning& given, const std::vector<ConditioningInput>& inputs,
                                const std::string& what);

// The scalar `name` of `c`, or the input's default when absent.
double conditioning_scalar(const Conditioning& c, const std::vector<ConditioningInput>& inputs,
                           const std::string& name);

// "name [L, 2560] (meaning)" per input, joined by "; ", for errors and
// ModelInfo.
std::string describe_conditioning(const std::vector<ConditioningInput>& inputs);

// A text input as the MMDiT denoisers take it: `c`'s tensor `states` [L, …]
// and, when `c` has one, its key mask `mask` [L], each with a batch axis of
// one added (the mask undefined when absent). INVALID_ARGUMENT prefixed by
// `what` when the mask's length is not the text's. REQUIRES: `c` passed
// check_conditioning with `states` required.
struct BatchedText {
  torch::Tensor states;
  torch::Tensor mask;
};
absl::StatusOr<BatchedText> batched_text(const Conditioning& c, const std::string& states, const std::string& mask,
                                         const std::string& what);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_CONDITIONING_H_
