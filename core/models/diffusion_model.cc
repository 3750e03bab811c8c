#include "core/models/diffusion_model.h"

#include <cassert>

namespace diffusiond {

torch::Tensor DiffusionModel::param(absl::string_view name) const {
  absl::StatusOr<torch::Tensor> t = weights_->at_compute_dtype(name);
  assert(t.ok() && "parameter missing from a validated model");
  return *t;
}

}  // namespace diffusiond
