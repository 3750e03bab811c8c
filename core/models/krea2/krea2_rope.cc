#include "core/models/krea2/krea2_rope.h"

#include "core/models/common/axis_rope.h"

namespace diffusiond {

torch::Tensor krea2_position_ids(int64_t text_len, int64_t rows, int64_t cols) {
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  torch::Tensor image = torch::zeros({rows, cols, 3}, f32);
  image.select(2, 1).copy_(torch::arange(rows, f32).view({rows, 1}).expand({rows, cols}));
  image.select(2, 2).copy_(torch::arange(cols, f32).view({1, cols}).expand({rows, cols}));
  return torch::cat({torch::zeros({text_len, 3}, f32), image.view({rows * cols, 3})}, 0);
}

std::pair<torch::Tensor, torch::Tensor> krea2_rope(const torch::Tensor& position_ids,
                                                   const std::array<int64_t, 3>& axes_dims, double theta) {
  // Upstream takes ids.float() first: positions are float32 values.
  return axis_rope_tables(position_ids.to(torch::kCPU).to(torch::kFloat32).to(torch::kFloat64), axes_dims, theta);
}

}  // namespace diffusiond
