// WanModel's working-memory estimate (activation_estimate.h), read off what
// wan_model.cc keeps alive. With S = video tokens and L = text rows per
// item, D = inner width, F = ffn_dim, E = the compute dtype's size:
//
//   held through the blocks: the patches, the embedded tokens and the
//     block's residual (2 S x D), the text input and its embedding (L x
//     text_dim, L x D), the RoPE cos/sin (float32, [S, head_dim/2] each,
//     the table and its batch copy);
//   one block at its peak, the largest of: self-attention (its input, q, k,
//     v, the output, its reshape and to_out: 7 S x D at E, plus the
//     float32 LayerNorm, modulated input and gated sum: 3 S x D at 4, plus
//     the score chunk); cross-attention (5 S x D, k and v over L, the
//     float32 LayerNorm, and the S x L score chunk); the FFN (its input and
//     output, 2 S x F for the projection and the GELU, 3 S x D at 4);
//   plus the modulation (float32), the largest weight decoded or converted
//   for one Linear, the outputs and, in a Denoise, the loop's float32
//   latents.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/models/denoiser_activations.h"
#include "core/models/wan/wan_model.h"
#include "core/precision/torch_dtype.h"

namespace diffusiond {

ActivationEstimate denoiser_activations(const WanConfig& c, const ActivationQuery& q, const AttentionOptions& attention,
                                        int64_t materialized_weight_bytes) {
  const LatentGrid g = latent_grid_of(q.latent_shape);
  const double b = static_cast<double>(std::max<int64_t>(q.batch, 1));
  const double e = static_cast<double>(torch::elementSize(q.compute_dtype));
  const int64_t tokens = (g.frames / c.patch_size[0]) * (g.height / c.patch_size[1]) * (g.width / c.patch_size[2]);
  int64_t text_rows = std::max<int64_t>(q.text_tokens, 1);
  if (q.denoise_loop) text_rows = std::max(text_rows, kWanDefaultTextLength);
  const double s = static_cast<double>(tokens), l = static_cast<double>(text_rows);
  const double d = static_cast<double>(c.inner_dim()), f = static_cast<double>(c.ffn_dim);
  const double hd = static_cast<double>(c.attention_head_dim);
  const double hidden = b * s * d * e, hidden32 = b * s * d * 4;

  ActivationTally tally(absl::StrCat("wan at ", scalar_type_name(q.compute_dtype), ", batch ", static_cast<int64_t>(b),
                                     " x ", tokens, " video tokens, ", text_rows, " text rows x inner ",
                                     c.inner_dim()));
  tally.add("held tokens 2 x hidden", 2 * hidden);
  tally.add("patches and text", b * e * (s * c.patch_features() + l * (c.text_dim + d)));
  tally.add("RoPE", b * s * hd * 4 * 2 + s * hd * 4);
  AttentionShape self;
  self.batch = static_cast<int64_t>(b), self.heads = c.num_attention_heads, self.head_dim = c.attention_head_dim;
  self.queries = self.keys = tokens;
  AttentionShape cross = self;
  cross.keys = text_rows;
  const auto scratch = [&](const AttentionShape& shape) {
    return static_cast<double>(attention_scratch_bytes(shape, q.compute_dtype, q.device_is_cpu, attention));
  };
  const double self_half = 7 * hidden + 3 * hidden32 + scratch(self);
  const double cross_half = 5 * hidden + 2 * b * l * d * e + 2 * hidden32 + scratch(cross);
  const double ffn = 2 * hidden + 2 * b * s * f * e + 3 * hidden32;
  const double block = std::max({self_half, cross_half, ffn});
  tally.add(block == ffn         ? absl::StrCat("block peak (FFN, ", c.ffn_dim, " wide)")
            : block == self_half ? "block peak (self-attention)"
                                 : "block peak (cross-attention)",
            block);
  tally.add("modulation", b * 4 * 2 * 8 * d);
  tally.add("weight decode", static_cast<double>(materialized_weight_bytes));
  const double latent = b * static_cast<double>(g.channels * g.frames * g.height * g.width);
  tally.add("outputs", 2 * latent * e);
  if (q.denoise_loop) tally.add("denoise loop", 6 * latent * 4);
  return tally.finish_with_allocator_slack();
}

std::optional<ActivationQuery> WanModel::step_activation_query(const NamedTensors& inputs) const {
  return hidden_states_step_activation_query(inputs, 5, 3, compute_dtype(*this));
}

}  // namespace diffusiond
