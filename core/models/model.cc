#include "core/models/model.h"

#include <cassert>
#include <optional>

#include "core/models/activation_estimate.h"
#include "core/models/forward_weights.h"
#include "core/models/linear_adapter.h"
#include "kernels/onednn_cpu.h"

namespace diffusiond {

absl::string_view model_role_name(ModelRole role) {
  switch (role) {
    case ModelRole::kDenoiser: return "denoiser";
    case ModelRole::kTextEncoder: return "text-encoder";
    case ModelRole::kVae: return "vae";
    case ModelRole::kTextConditioner: return "text-conditioner";
  }
  return "unknown";
}

torch::Tensor Model::param(absl::string_view name) const {
  if (ForwardWeights* source = ForwardWeights::current_for(this)) {
    return source->param(name, weights_->compute_dtype());
  }
  absl::StatusOr<torch::Tensor> t = weights_->at_compute_dtype(name);
  assert(t.ok() && "parameter missing from a validated model");
  return *t;
}

torch::Tensor Model::linear_layer(const torch::Tensor& x, absl::string_view weight, absl::string_view bias) const {
  torch::Tensor y = stored_linear(x, weight, bias);
  // A call's adapters add their terms beside the stored weight, whichever
  // path computed it (linear_adapter.h).
  if (const LinearAdapter* adapter = LinearAdapterScope::current_for(this)) return adapter->add_term(y, x, weight);
  return y;
}

torch::Tensor Model::stored_linear(const torch::Tensor& x, absl::string_view weight, absl::string_view bias) const {
  if (ForwardWeights* source = ForwardWeights::current_for(this)) {
    if (std::optional<torch::Tensor> y = source->linear(x, weight, bias, weights_->compute_dtype())) return *y;
  }
  const torch::Tensor b = bias.empty() ? torch::Tensor() : param(bias);
  // bf16 on a CPU with native bf16 products, the weight packed for them at
  // its first use where the engine allows it.
  if (x.scalar_type() == torch::kBFloat16 && x.device().is_cpu() && have_onednn_bf16()) {
    if (std::optional<torch::Tensor> y = weights_->packed_linear(weight, x, b)) return *y;
  }
  const torch::Tensor w = param(weight);
  // bf16 on a CPU with native bf16 products: oneDNN reading the weight where
  // it lies (kernels/onednn_cpu.h).
  if (x.scalar_type() == torch::kBFloat16 && w.scalar_type() == torch::kBFloat16 && x.device().is_cpu() &&
      have_onednn_bf16()) {
    return onednn_bf16_linear(x, w, b);
  }
  return torch::linear(x, w, b);
}

torch::Device Model::forward_device() const {
  const ForwardWeights* source = ForwardWeights::current_for(this);
  return source != nullptr ? source->device() : torch::Device(torch::kCPU);
}

ActivationEstimate Model::step_activations(const NamedTensors&, bool) const { return {}; }

}  // namespace diffusiond
