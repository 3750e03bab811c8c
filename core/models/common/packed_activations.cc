#include "core/models/common/packed_activations.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/precision/torch_dtype.h"

namespace diffusiond {

PackedActivationSizes packed_activation_sizes(const ActivationQuery& q) {
  PackedActivationSizes z;
  // [C, H, W] unpacked, or one Step item [S, in_channels].
  if (q.latent_shape.size() == 3) {
    z.image = (q.latent_shape[1] / 2) * (q.latent_shape[2] / 2);
    z.latent = q.latent_shape[0] * q.latent_shape[1] * q.latent_shape[2];
  } else if (q.latent_shape.size() == 2) {
    z.image = q.latent_shape[0];
    z.latent = q.latent_shape[0] * q.latent_shape[1];
  }
  z.text = q.text_tokens;
  z.calls = std::max<int64_t>(q.batch, 1);
  z.batch = static_cast<double>(q.denoise_loop ? 1 : z.calls);
  z.element = static_cast<double>(torch::elementSize(q.compute_dtype));
  return z;
}

std::string packed_activation_title(absl::string_view model, const ActivationQuery& q,
                                    const PackedActivationSizes& sizes, int64_t dim) {
  return absl::StrCat(model, " at ", scalar_type_name(q.compute_dtype), ", ",
                      q.denoise_loop && sizes.calls > 1 ? absl::StrCat(sizes.calls, " forwards of ") : "", "batch ",
                      static_cast<int64_t>(sizes.batch), " x ", sizes.image + sizes.text, " tokens (", sizes.image,
                      " image + ", sizes.text, " text) x dim ", dim);
}

double joint_attention_scratch_bytes(const ActivationQuery& q, const PackedActivationSizes& sizes, int64_t heads,
                                     int64_t head_dim, const AttentionOptions& attention) {
  AttentionShape shape;
  shape.batch = static_cast<int64_t>(sizes.batch), shape.heads = heads, shape.head_dim = head_dim;
  shape.queries = shape.keys = sizes.image + sizes.text;
  return static_cast<double>(attention_scratch_bytes(shape, q.compute_dtype, q.device_is_cpu, attention));
}

void add_decode_and_outputs(const PackedActivationSizes& sizes, int64_t out_features,
                            int64_t materialized_weight_bytes, ActivationTally* tally) {
  const double b = sizes.batch, e = sizes.element, s = static_cast<double>(sizes.image);
  tally->add("weight decode", static_cast<double>(materialized_weight_bytes));
  tally->add("outputs", b * s * static_cast<double>(out_features) * (e + 4));
}

void add_denoise_loop(const PackedActivationSizes& sizes, int copies, ActivationTally* tally) {
  tally->add("denoise loop",
             (copies + static_cast<double>(sizes.calls)) * static_cast<double>(sizes.latent) * 4);
}

std::pair<double, std::string> largest_activation_peak(absl::Span<const std::pair<double, std::string>> peaks) {
  return *std::max_element(peaks.begin(), peaks.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
}

}  // namespace diffusiond
