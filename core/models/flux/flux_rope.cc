#include "core/models/flux/flux_rope.h"

#include "core/models/common/axis_rope.h"

namespace diffusiond {

std::pair<torch::Tensor, torch::Tensor> flux_rope_tables(const torch::Tensor& ids,
                                                         const std::array<int64_t, 3>& axes_dims,
                                                         double theta) {
  return axis_rope_tables(ids.to(torch::kFloat64), axes_dims, theta);
}

}  // namespace diffusiond
