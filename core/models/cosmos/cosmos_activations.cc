// CosmosModel's working-memory estimate (activation_estimate.h), read off
// what cosmos_model.cc keeps alive. With S = image tokens and L = text rows
// per item, D = hidden, F = the FFN width, E = the compute dtype's size:
//
//   held through the blocks: the latents at E with the mask channel, the
//     patches, the embedded tokens and the block's residual (2 S x D), the
//     text (L x text_embed_dim), the RoPE cos/sin (float32 [S, head_dim]);
//   one block at its peak, the largest of: self-attention (its modulated
//     input, q, k, v, the output, its reshape and to_out: 7 S x D at E, the
//     gated sum, plus the float32 q/k RMSNorm and rotate-half temporaries:
//     3 S x D at 4, plus the score chunk); cross-attention (5 S x D, k and v
//     over L, q's float32 norm, the S x L score chunk); the FFN (its input,
//     output, gated sum and sum, 2 S x F for the projection and the GELU);
//   plus the modulations, the largest weight decoded or converted for one
//   Linear, the outputs and, in a Denoise, the loop's float32 latents.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/models/cosmos/cosmos_model.h"
#include "core/models/denoiser_activations.h"
#include "core/precision/torch_dtype.h"

namespace diffusiond {

ActivationEstimate denoiser_activations(const CosmosConfig& c, const ActivationQuery& q,
                                        const AttentionOptions& attention, int64_t materialized_weight_bytes) {
  const LatentGrid g = latent_grid_of(q.latent_shape);
  const double b = static_cast<double>(std::max<int64_t>(q.batch, 1));
  const double e = static_cast<double>(torch::elementSize(q.compute_dtype));
  const int64_t tokens = (g.frames / c.patch_size[0]) * (g.height / c.patch_size[1]) * (g.width / c.patch_size[2]);
  // Every row the conditioning has (the conditioner's 512 with its
  // padding): the predictor pads nothing.
  const int64_t text_rows = std::max<int64_t>(q.text_tokens, 1);
  const double s = static_cast<double>(tokens), l = static_cast<double>(text_rows);
  const double d = static_cast<double>(c.hidden_size()), f = static_cast<double>(c.ffn_dim());
  const double hd = static_cast<double>(c.attention_head_dim);
  const double hidden = b * s * d * e, hidden32 = b * s * d * 4;
  const double latent = b * static_cast<double>(g.channels * g.frames * g.height * g.width);

  ActivationTally tally(absl::StrCat("cosmos at ", scalar_type_name(q.compute_dtype), ", batch ",
                                     static_cast<int64_t>(b), " x ", tokens, " image tokens, ", text_rows,
                                     " text rows x hidden ", c.hidden_size()));
  tally.add("held tokens 2 x hidden", 2 * hidden);
  tally.add("latents, mask channel and patches",
            e * (latent * (g.channels + 1) / std::max<int64_t>(g.channels, 1) + b * s * c.patch_features()));
  tally.add("text", b * l * c.text_embed_dim * e);
  tally.add("RoPE", 2 * s * hd * 4);
  AttentionShape self;
  self.batch = static_cast<int64_t>(b), self.heads = c.num_attention_heads, self.head_dim = c.attention_head_dim;
  self.queries = self.keys = tokens;
  AttentionShape cross = self;
  cross.keys = text_rows;
  const auto scratch = [&](const AttentionShape& shape) {
    return static_cast<double>(attention_scratch_bytes(shape, q.compute_dtype, q.device_is_cpu, attention));
  };
  const double self_half = 8 * hidden + 3 * hidden32 + scratch(self);
  const double cross_half = 6 * hidden + 2 * b * l * d * e + 3 * hidden32 + scratch(cross);
  const double ffn = 4 * hidden + 2 * b * s * f * e;
  const double block = std::max({self_half, cross_half, ffn});
  tally.add(block == ffn         ? absl::StrCat("block peak (FFN, ", c.ffn_dim(), " wide)")
            : block == self_half ? "block peak (self-attention)"
                                 : "block peak (cross-attention)",
            block);
  tally.add("modulation", b * 16 * d * e);
  tally.add("weight decode", static_cast<double>(materialized_weight_bytes));
  tally.add("outputs", 3 * latent * e);
  if (q.denoise_loop) tally.add("denoise loop", 6 * latent * 4);
  return tally.finish_with_allocator_slack();
}

std::optional<ActivationQuery> CosmosModel::step_activation_query(const NamedTensors& inputs) const {
  return hidden_states_step_activation_query(inputs, 5, 3, compute_dtype(*this));
}

}  // namespace diffusiond
