#include "core/models/model.h"

#include <cassert>

namespace diffusiond {

absl::string_view model_role_name(ModelRole role) {
  switch (role) {
    case ModelRole::kDenoiser: return "denoiser";
    case ModelRole::kTextEncoder: return "text-encoder";
    case ModelRole::kVae: return "vae";
  }
  return "unknown";
}

torch::Tensor Model::param(absl::string_view name) const {
  absl::StatusOr<torch::Tensor> t = weights_->at_compute_dtype(name);
  assert(t.ok() && "parameter missing from a validated model");
  return *t;
}

}  // namespace diffusiond
