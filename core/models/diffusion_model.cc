#include "core/models/diffusion_model.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/util/bounded_text.h"

namespace diffusiond {

absl::Status check_latent_shape(const LatentLayout& layout, const std::vector<int64_t>& shape,
                                const std::string& model_id) {
  const int64_t m = layout.multiple;
  const auto side_ok = [&](int64_t side) { return side >= m && side % m == 0 && side <= layout.max_side; };
  if (shape.size() == 3 && shape[0] == layout.channels && side_ok(shape[1]) && side_ok(shape[2])) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "latents must be [", layout.channels, ", H, W] with H and W multiples of ", m, " from ", m, " to ",
      layout.max_side, " for model \"", bounded(model_id), "\", got [", absl::StrJoin(shape, ", "), "]"));
}

}  // namespace diffusiond
