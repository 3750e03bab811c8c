// LinearAdapter: a term one call adds to its model's linear layers beside
// the stored weights — the low-rank updates of LoRA adapters (core/lora).
// While a LinearAdapterScope lives, Model::linear_layer on the calling
// thread adds its adapter's term to every product it computes, whatever
// path computed the product (plain, packed bf16, a device's scaled FP8). The
// stored weights never change, so switching adapters between calls reloads
// and re-quantises nothing.
//
// Not here: reading or converting adapter files (core/lora).
#ifndef DIFFUSIOND_CORE_MODELS_LINEAR_ADAPTER_H_
#define DIFFUSIOND_CORE_MODELS_LINEAR_ADAPTER_H_

#include <torch/types.h>

#include "absl/strings/string_view.h"

namespace diffusiond {

class Model;

// Implementations are immutable while attached: forwards on several threads
// may read one adapter at once.
class LinearAdapter {
 public:
  virtual ~LinearAdapter() = default;
  // Returns `y` (= x · weightᵀ + bias, fresh from the product) plus this
  // adapter's term for the weight named `weight` at input `x`, in y's dtype
  // and on y's device; `y` itself when nothing targets that weight. May add
  // in place: y is the caller's own tensor.
  virtual torch::Tensor add_term(torch::Tensor y, const torch::Tensor& x, absl::string_view weight) const = 0;
};

// Makes `adapter` the calling thread's adapter for `model` until
// destruction: the attach point of one call. Scopes nest (the innermost for
// a model wins; the previous one is restored when this one goes). Not
// thread-safe: one forward thread holds it. `model` and `adapter` must
// outlive the scope.
class LinearAdapterScope {
 public:
  LinearAdapterScope(const Model& model, const LinearAdapter& adapter);
  LinearAdapterScope(const LinearAdapterScope&) = delete;
  LinearAdapterScope& operator=(const LinearAdapterScope&) = delete;
  ~LinearAdapterScope();

  // The calling thread's adapter for `model`, or null.
  static const LinearAdapter* current_for(const Model* model);

 private:
  const Model* const model_;
  const LinearAdapter* const adapter_;
  const LinearAdapterScope* const previous_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_LINEAR_ADAPTER_H_
