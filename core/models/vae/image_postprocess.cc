#include "core/models/vae/image_postprocess.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/util/exception_status.h"

namespace diffusiond {
namespace {

absl::Status check_rank4(const torch::Tensor& t, bool want_float, const char* what) {
  const bool ok = t.defined() && t.dim() == 4 &&
                  (want_float ? t.is_floating_point() : t.scalar_type() == torch::kUInt8);
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      what, " must be a ", want_float ? "floating-point [B, C, H, W]" : "uint8 [B, H, W, C]",
      " tensor, got ", t.defined() ? absl::StrCat(c10::toString(t.scalar_type()), " [",
                                                  absl::StrJoin(t.sizes(), ", "), "]")
                                   : "nothing"));
}

}  // namespace

absl::StatusOr<torch::Tensor> image_to_unit_nhwc(const torch::Tensor& image) {
  if (absl::Status s = check_rank4(image, true, "the image"); !s.ok()) return s;
  return status_of("image post-processing", [&]() -> absl::StatusOr<torch::Tensor> {
    const torch::Tensor x = image.to(torch::kFloat32);
    return (x * 0.5 + 0.5).clamp(0, 1).permute({0, 2, 3, 1}).contiguous();
  });
}

absl::StatusOr<torch::Tensor> image_to_uint8(const torch::Tensor& image) {
  absl::StatusOr<torch::Tensor> unit = image_to_unit_nhwc(image);
  if (!unit.ok()) return unit.status();
  return status_of("image post-processing", [&]() -> absl::StatusOr<torch::Tensor> {
    // torch::round rounds half to even, like numpy's; the product is
    // float32 as numpy's is.
    return torch::round(*unit * 255.0).to(torch::kUInt8);
  });
}

absl::StatusOr<torch::Tensor> uint8_to_image(const torch::Tensor& pixels) {
  if (absl::Status s = check_rank4(pixels, false, "the pixels"); !s.ok()) return s;
  return status_of("image pre-processing", [&]() -> absl::StatusOr<torch::Tensor> {
    const torch::Tensor unit = pixels.to(torch::kFloat32) / 255.0;
    return (unit * 2.0 - 1.0).permute({0, 3, 1, 2}).contiguous();
  });
}

}  // namespace diffusiond
