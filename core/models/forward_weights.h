// ForwardWeights: where a forward reads its model's weights when they are
// not the model's own RAM copy — a placement on a device (core/vram). While
// one lives it is the calling thread's source for its model: Model::param()
// asks it, and Model::forward_device() is its device. Nothing else in a
// forward changes, so one forward code path serves the CPU, the simulated
// device and CUDA.
#ifndef DIFFUSIOND_CORE_MODELS_FORWARD_WEIGHTS_H_
#define DIFFUSIOND_CORE_MODELS_FORWARD_WEIGHTS_H_

#include <torch/types.h>

#include <optional>

#include "absl/strings/string_view.h"

namespace diffusiond {

class Model;

// Not thread-safe: one forward thread uses it. Scopes nest (the previous
// one is restored when this one goes).
class ForwardWeights {
 public:
  ForwardWeights(const ForwardWeights&) = delete;
  ForwardWeights& operator=(const ForwardWeights&) = delete;
  virtual ~ForwardWeights();

  // The calling thread's source for `model`, or null.
  static ForwardWeights* current_for(const Model* model);

  const Model* model() const { return model_; }
  virtual torch::Device device() const = 0;
  // The weight `name` at `dtype`, on device(). REQUIRES: the model holds it.
  virtual torch::Tensor param(absl::string_view name, torch::ScalarType dtype) = 0;
  // x @ weight^T + bias at `dtype` computed some other way than upcasting
  // the weight (a scaled FP8 matmul), or nothing: the caller upcasts.
  virtual std::optional<torch::Tensor> linear(const torch::Tensor& x, absl::string_view weight,
                                              absl::string_view bias, torch::ScalarType dtype) {
    return std::nullopt;
  }

 protected:
  // Makes this the calling thread's source for `model` until destruction.
  explicit ForwardWeights(const Model* model);

 private:
  const Model* const model_;
  ForwardWeights* const previous_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_FORWARD_WEIGHTS_H_
