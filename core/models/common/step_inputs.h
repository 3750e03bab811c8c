// The name check of a named-tensor Step whose inputs are upstream's
// forward() arguments (FLUX, Krea 2, Qwen-Image): every missing and every
// unexpected name is collected, so a remote caller learns all that is wrong
// in one reply.
//
// Not here: shape checks, which each model's forward() makes.
#ifndef DIFFUSIOND_CORE_MODELS_COMMON_STEP_INPUTS_H_
#define DIFFUSIOND_CORE_MODELS_COMMON_STEP_INPUTS_H_

#include <torch/types.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/models/model.h"

namespace diffusiond {

// Reads named Step inputs into a model's input struct. Not thread-safe;
// borrows `inputs`, which must outlive it.
class StepInputCheck {
 public:
  explicit StepInputCheck(const NamedTensors& inputs) : inputs_(inputs) {}

  // Copies input `name` into `*slot`; its absence is a problem.
  void require(const char* name, torch::Tensor* slot);
  // Copies input `name` into `*slot` when present.
  void optional(const char* name, torch::Tensor* slot);
  // Returns input `name`, or nullptr when absent; either way the name is
  // expected. The caller reads it and reports its problems.
  const torch::Tensor* find(const char* name);
  // Records a problem with the inputs, in the reply's order.
  void add_problem(std::string problem) { problems_.push_back(std::move(problem)); }
  // Words the problem of an unexpected input `name` as `problem` instead of
  // the generic one.
  void explain_unexpected(const char* name, std::string problem) { explained_[name] = std::move(problem); }

  // Returns OK when nothing was missing or unexpected; else INVALID_ARGUMENT
  // "<prefix><the first problems><expected>", unexpected names last.
  absl::Status finish(absl::string_view prefix, absl::string_view expected);

 private:
  const NamedTensors& inputs_;
  std::set<std::string> known_;
  std::map<std::string, std::string> explained_;
  std::vector<std::string> problems_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_COMMON_STEP_INPUTS_H_
