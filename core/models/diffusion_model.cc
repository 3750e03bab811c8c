#include "core/models/diffusion_model.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/util/bounded_text.h"

namespace diffusiond {

absl::Status check_latent_shape(const LatentLayout& layout, const std::vector<int64_t>& shape,
                                const std::string& model_id) {
  const int64_t m = layout.multiple;
  const auto side_ok = [&](int64_t side) { return side >= m && side % m == 0 && side <= layout.max_side; };
  const size_t n = shape.size();
  const bool video = layout.max_frames > 0 && n == 4 && shape[1] >= 1 && shape[1] <= layout.max_frames;
  if ((n == 3 || video) && shape[0] == layout.channels && side_ok(shape[n - 2]) && side_ok(shape[n - 1])) {
    return absl::OkStatus();
  }
  const std::string frames = layout.max_frames > 0 ? absl::StrCat(" (or [", layout.channels, ", F, H, W], F from 1 to ",
                                                                  layout.max_frames, ")")
                                                   : "";
  return absl::InvalidArgumentError(absl::StrCat(
      "latents must be [", layout.channels, ", H, W]", frames, " with H and W multiples of ", m, " from ", m, " to ",
      layout.max_side, " for model \"", bounded(model_id), "\", got [", absl::StrJoin(shape, ", "), "]"));
}

ActivationEstimate DiffusionModel::step_activations(const NamedTensors& inputs, bool device_is_cpu) const {
  std::optional<ActivationQuery> query = step_activation_query(inputs);
  if (!query.has_value()) return {};
  query->device_is_cpu = device_is_cpu;
  return estimate_activations(*query);
}

}  // namespace diffusiond
