// FluxModel's working-memory estimate (activation_estimate.h), read off
// what flux_model.cc keeps alive. With S image tokens (2x2 patches), L text
// tokens, T = S + L, D = inner_dim, M = mlp_hidden, E = the compute dtype's
// size, per item of one forward:
//
//   a single block at its peak: the joint input, the modulated input, the
//     MLP branch (M), q, k, v, the attention output, their concatenation
//     (D + M), proj_out, its gated product and the sum (10 D + 2 M); before
//     that, inside attention, the joint input, the modulated input, the
//     MLP branch, q, k, v and the output (6 D + M) plus the score chunk
//     (attention_scratch_bytes), then the output's reshape; throughout,
//     the double blocks' last x and c (D over T), still held by the
//     forward;
//   a double block at its peak: both streams' inputs and modulated inputs,
//     q, k, v and the joint output (6 D over T), plus the image stream's
//     MLP: the residual, its modulated input, the MLP's hidden before and
//     after GELU and its output (3 D + 2 M over S);
//   plus the RoPE rows (float32 cos/sin: the table, and the text, image and
//   joint rows per item), the inputs converted to the compute dtype, the
//   modulation vectors, the largest weight decoded or converted for one
//   Linear, the outputs and, in a Denoise, the packed latents and the
//   loop's float32 latents.
//
// A guided Denoise runs its negative pass as a second forward of one item
// (flux_predictor.cc), so its peak is one item's forward.
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/models/common/packed_activations.h"
#include "core/models/denoiser_activations.h"
#include "core/models/flux/flux_model.h"

namespace diffusiond {

ActivationEstimate denoiser_activations(const FluxConfig& c, const ActivationQuery& q,
                                        const AttentionOptions& attention, int64_t materialized_weight_bytes) {
  const PackedActivationSizes z = packed_activation_sizes(q);
  const double b = z.batch, e = z.element, s = z.image, l = z.text, t = s + l;
  const double d = static_cast<double>(c.inner_dim()), m = static_cast<double>(c.mlp_hidden());
  const double hd = static_cast<double>(c.attention_head_dim);

  ActivationTally tally(packed_activation_title("flux", q, z, c.inner_dim()));
  const double scores = joint_attention_scratch_bytes(q, z, c.num_attention_heads, c.attention_head_dim, attention);
  // Each kind of block peaks in its MLP or inside attention (the score
  // chunk); the largest of the four is the forward's.
  const bool singles = c.num_single_layers > 0, doubles = c.num_layers > 0;
  const std::string mlp = absl::StrCat(" block peak (MLP ", c.mlp_hidden(), " wide)");
  const std::pair<double, std::string> peaks[] = {
      {singles ? b * e * t * (11 * d + 2 * m) : 0, "single" + mlp},
      {singles ? b * e * t * (8 * d + m) + scores : 0, "single block peak (attention scores)"},
      {doubles ? b * e * (6 * d * t + (3 * d + 2 * m) * s) : 0, "double" + mlp},
      {doubles ? b * e * 7 * d * t + scores : 0, "double block peak (attention scores)"}};
  const std::pair<double, std::string> peak = largest_activation_peak(peaks);
  tally.add(peak.second, peak.first);
  tally.add("RoPE", 4 * hd * t * (1 + 2 * b));
  tally.add("inputs at compute dtype",
            b * e * (s * static_cast<double>(c.in_channels) + l * static_cast<double>(c.joint_attention_dim)));
  tally.add("modulation", b * e * 16 * d);
  add_decode_and_outputs(z, c.out_features(), materialized_weight_bytes, &tally);
  if (q.denoise_loop) {
    tally.add("packed latents and ids", s * (static_cast<double>(c.in_channels) + 3) * 4 + l * 3 * 4);
    add_denoise_loop(z, 5, &tally);
  }
  return tally.finish_with_allocator_slack();
}

std::optional<ActivationQuery> FluxModel::step_activation_query(const NamedTensors& inputs) const {
  return packed_step_activation_query(inputs, 3, compute_dtype(*this));
}

}  // namespace diffusiond
