#include "core/models/flux/flux_latents.h"

#include <torch/types.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace diffusiond {
namespace {

absl::Status check_side(int64_t height, int64_t width) {
  if (height <= 0 || width <= 0 || height % 2 != 0 || width % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat("FLUX latent is ", height, " x ", width,
                                                   ", expected positive even height and width"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<torch::Tensor> pack_latents(const torch::Tensor& latents) {
  if (!latents.defined() || latents.dim() != 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FLUX latents are [", latents.defined() ? absl::StrJoin(latents.sizes(), ", ") : "",
        "], expected [B, C, H, W]"));
  }
  const int64_t b = latents.size(0), c = latents.size(1), h = latents.size(2), w = latents.size(3);
  if (absl::Status s = check_side(h, w); !s.ok()) return s;
  return latents.reshape({b, c, h / 2, 2, w / 2, 2}).permute({0, 2, 4, 1, 3, 5}).reshape({b, (h / 2) * (w / 2), c * 4});
}

absl::StatusOr<torch::Tensor> unpack_latents(const torch::Tensor& packed, int64_t height, int64_t width) {
  if (absl::Status s = check_side(height, width); !s.ok()) return s;
  const int64_t tokens = (height / 2) * (width / 2);
  if (!packed.defined() || packed.dim() != 3 || packed.size(1) != tokens || packed.size(2) % 4 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "packed FLUX latents are [", packed.defined() ? absl::StrJoin(packed.sizes(), ", ") : "",
        "], expected [B, ", tokens, ", 4C] for a ", height, " x ", width, " latent"));
  }
  const int64_t b = packed.size(0), c = packed.size(2) / 4;
  return packed.reshape({b, height / 2, width / 2, c, 2, 2}).permute({0, 3, 1, 4, 2, 5}).reshape({b, c, height, width});
}

absl::StatusOr<torch::Tensor> latent_image_ids(int64_t height, int64_t width) {
  if (absl::Status s = check_side(height, width); !s.ok()) return s;
  const int64_t rows = height / 2, cols = width / 2;
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  torch::Tensor ids = torch::zeros({rows, cols, 3}, f32);
  ids.select(2, 1).copy_(torch::arange(rows, f32).unsqueeze(1).expand({rows, cols}));
  ids.select(2, 2).copy_(torch::arange(cols, f32).unsqueeze(0).expand({rows, cols}));
  return ids.reshape({rows * cols, 3});
}

}  // namespace diffusiond
