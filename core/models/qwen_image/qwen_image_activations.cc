// QwenImageModel's working-memory estimate (activation_estimate.h), read
// off what qwen_image_model.cc keeps alive. With S image tokens (2x2
// patches), L text tokens, T = S + L, D = inner_dim, M = mlp_hidden, E = the
// compute dtype's size, per item of one forward:
//
//   a block at its peak: the block's inputs and modulated inputs of both
//     streams, q, k, v and the joint attention output, all held to the
//     block's end, plus either the score chunk and the output inside
//     attention (attention_scratch_bytes), or the new residual streams and
//     one stream's MLP at its second Linear: the modulated input, the
//     hidden before and after GELU and the output (7 D over T, plus 2 D +
//     2 M over the longer stream; the gated sum comes after the hiddens
//     are freed);
//   plus the RoPE rows (float32 cos/sin: the tables and their per-item
//   copies), the key mask, the inputs converted to the compute dtype and
//   the RMSNorm'd text, the modulation vectors (with zero_cond_t, per image
//   token: an edit's reference images are modulated at t = 0), the largest
//   weight decoded or converted for one Linear, the outputs and, in a
//   Denoise, the packed latents and the loop's float32 latents, predictions
//   and the norm rescale's temporaries.
//
// A guided Denoise runs its negative pass as a second forward of one item
// (qwen_image_predictor.cc), so its peak is one item's forward.
#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/models/common/packed_activations.h"
#include "core/models/denoiser_activations.h"
#include "core/models/qwen_image/qwen_image_model.h"

namespace diffusiond {

ActivationEstimate denoiser_activations(const QwenImageConfig& c, const ActivationQuery& q,
                                        const AttentionOptions& attention, int64_t materialized_weight_bytes) {
  const PackedActivationSizes z = packed_activation_sizes(q);
  const double b = z.batch, e = z.element, s = z.image, l = z.text, t = s + l;
  const double d = static_cast<double>(c.inner_dim()), m = static_cast<double>(c.mlp_hidden());
  const double hd = static_cast<double>(c.attention_head_dim);

  ActivationTally tally(packed_activation_title("qwen-image", q, z, c.inner_dim()));
  const double scores = joint_attention_scratch_bytes(q, z, c.num_attention_heads, c.attention_head_dim, attention);
  const std::pair<double, std::string> peaks[] = {{b * e * (7 * d * t + (2 * d + 2 * m) * std::max(s, l)),
                                                   absl::StrCat("block peak (MLP ", c.mlp_hidden(), " wide)")},
                                                  {b * e * 7 * d * t + scores, "block peak (attention scores)"}};
  const std::pair<double, std::string> peak = largest_activation_peak(peaks);
  tally.add(peak.second, peak.first);
  tally.add("RoPE", 4 * hd * t * (1 + b));
  tally.add("key mask", b * t);
  tally.add("inputs at compute dtype",
            b * e * (s * static_cast<double>(c.in_channels) + 2 * l * static_cast<double>(c.joint_attention_dim)));
  tally.add("modulation", b * e * 16 * d);
  // zero_cond_t with reference images: the image modulation per token.
  if (c.zero_cond_t) tally.add("zero_cond_t per-token modulation", b * e * 6 * d * s);
  add_decode_and_outputs(z, c.out_features(), materialized_weight_bytes, &tally);
  if (q.denoise_loop) {
    tally.add("packed latents", s * static_cast<double>(c.in_channels) * 4);
    add_denoise_loop(z, 7, &tally);
  }
  return tally.finish_with_allocator_slack();
}

std::optional<ActivationQuery> QwenImageModel::step_activation_query(const NamedTensors& inputs) const {
  return packed_step_activation_query(inputs, 3, compute_dtype(*this));
}

}  // namespace diffusiond
