// Krea2Model's working-memory estimate (activation_estimate.h), read off
// what krea2_model.cc keeps alive (C++ temporaries live to the end of their
// full expression, and a block's modulated inputs to the end of the block).
// With S image tokens (2x2 patches), L text tokens, T = S + L, D = hidden,
// F = intermediate_size, E = the compute dtype's size, per item of one
// forward:
//
//   a main block at its peak, the largest of: the output projection of the
//     attention (the block input, its modulated norm, q, k and v repeated
//     to the query heads, the attention output, the gate, its sigmoid, the
//     gated product and the projection: 10 D, plus the gated residual: 11 D
//     over T); inside attention (the input, the modulated norm, q, k, v and
//     K/V before the repeat: 7 D over T) plus the score chunk
//     (attention_scratch_bytes); the SwiGLU (the block input, the modulated
//     norm, the new residual, the FF input, the down projection, the gated
//     product and the sum: 7 D, plus gate and up: 2 F, over T, silu(gate)
//     * up written over gate);
//   or the text stage when larger: the layerwise blocks run the same
//     shapes over L x num_text_layers rows of width text_hidden_dim (and
//     text_intermediate_size), with the input stack and its compute-dtype
//     copy beside them;
//   plus the embedded text and image kept beside the joint stream (D over
//   T), the RoPE rows (float32 cos/sin: the tables and their per-item
//   copies), the key mask, the image input at the compute dtype, the
//   modulation vectors, the largest weight decoded or converted for one
//   Linear, the outputs and, in a Denoise, the packed latents, the position
//   ids and the loop's float32 latents and predictions.
//
// A guided Denoise runs its negative pass as a second forward of one item
// (krea2_predictor.cc), so its peak is one item's forward.
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/models/common/packed_activations.h"
#include "core/models/denoiser_activations.h"
#include "core/models/krea2/krea2_model.h"

namespace diffusiond {
namespace {

// One block's peak over `rows` tokens of width `d` and SwiGLU width `f`,
// with `scores` the attention scratch: (bytes, what).
std::pair<double, std::string> krea2_block_peak(double b, double e, double rows, double d, double f, double scores,
                                                const std::string& what) {
  const std::pair<double, std::string> peaks[] = {
      {b * e * 11 * d * rows, absl::StrCat(what, " peak (attention output)")},
      {b * e * 7 * d * rows + scores, absl::StrCat(what, " peak (attention scores)")},
      {b * e * (7 * d + 2 * f) * rows, absl::StrCat(what, " peak (SwiGLU ", static_cast<int64_t>(f), " wide)")}};
  return largest_activation_peak(peaks);
}

}  // namespace

ActivationEstimate denoiser_activations(const Krea2Config& c, const ActivationQuery& q,
                                        const AttentionOptions& attention, int64_t materialized_weight_bytes) {
  const PackedActivationSizes z = packed_activation_sizes(q);
  const double b = z.batch, e = z.element, s = z.image, l = z.text, t = s + l;
  const double d = static_cast<double>(c.hidden_size()), hd = static_cast<double>(c.attention_head_dim);
  const double layers = static_cast<double>(c.num_text_layers), dt = static_cast<double>(c.text_hidden_dim);

  ActivationTally tally(packed_activation_title("krea2", q, z, c.hidden_size()));
  const double main_scores =
      joint_attention_scratch_bytes(q, z, c.num_attention_heads, c.attention_head_dim, attention);
  const std::pair<double, std::string> block =
      krea2_block_peak(b, e, t, d, static_cast<double>(c.intermediate_size), main_scores, "block");
  // The layerwise blocks: L x num_text_layers rows (one sequence per
  // token); the refiner blocks' L rows are fewer.
  AttentionShape text;
  text.batch = static_cast<int64_t>(b) * q.text_tokens, text.heads = c.text_num_attention_heads;
  text.head_dim = c.text_head_dim(), text.queries = text.keys = c.num_text_layers;
  const double text_scores =
      static_cast<double>(attention_scratch_bytes(text, q.compute_dtype, q.device_is_cpu, attention));
  std::pair<double, std::string> fusion =
      krea2_block_peak(b, e, l * layers, dt, static_cast<double>(c.text_intermediate_size), text_scores, "text fusion");
  fusion.first += b * e * 2 * l * layers * dt;  // the input stack and its reshaped copy
  const auto& peak = block.first >= fusion.first ? block : fusion;
  tally.add(peak.second, peak.first);
  tally.add("embedded text and image", b * e * d * t);
  tally.add("RoPE", 4 * hd * t * (1 + b));
  tally.add("key mask", b * t);
  tally.add("image input at compute dtype", b * e * s * static_cast<double>(c.in_channels));
  tally.add("modulation", b * e * 16 * d);
  add_decode_and_outputs(z, c.in_channels, materialized_weight_bytes, &tally);
  if (q.denoise_loop) {
    tally.add("packed latents and positions", s * static_cast<double>(c.in_channels) * 4 + t * 3 * 4);
    add_denoise_loop(z, 7, &tally);
  }
  return tally.finish_with_allocator_slack();
}

std::optional<ActivationQuery> Krea2Model::step_activation_query(const NamedTensors& inputs) const {
  return packed_step_activation_query(inputs, 4, compute_dtype(*this));
}

}  // namespace diffusiond
