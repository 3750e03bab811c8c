// ZImageModel's working-memory estimate (activation_estimate.h), read off
// what z_image_model.cc keeps alive. With U = padded image + caption tokens
// per item, D = dim, F = ffn_hidden, E = the compute dtype's size:
//
//   held through the main layers: the patches, the padded captions, and
//     three U x D copies of the tokens (the embedded image and caption, the
//     refiners' outputs, the per-item concatenation `unified`); the RoPE
//     cos/sin rows (float32) four times over U (lookups, refiner pads,
//     concatenation, its pad) and the int64 position ids;
//   one block at its peak: in the FFN its input, attention's output, the
//     residual and the normed input (4 D) plus w1 h and w3 h (2 F); in the
//     attention half its input, the normed input, q, k, v, the output, its
//     reshape and to_out (8 D); inside attention its input, the normed
//     input, q, k, v and the output (6 D) plus the score chunk
//     (attention_scratch_bytes);
//   plus the modulation vectors, the largest weight decoded or converted
//   for one Linear, the outputs and, in a Denoise, the loop's float32
//   latents.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/models/denoiser_activations.h"
#include "core/models/z_image/z_image_model.h"
#include "core/precision/torch_dtype.h"

namespace diffusiond {
namespace {

int64_t padded(int64_t n) { return n + z_image_padding_for(n); }

// The latents' frames, height and width from [C, H, W] or [C, F, H, W].
struct Grid {
  int64_t channels = 0, frames = 1, height = 0, width = 0;
};

Grid grid_of(const std::vector<int64_t>& shape) {
  Grid g;
  if (shape.size() == 3) g = {shape[0], 1, shape[1], shape[2]};
  if (shape.size() == 4) g = {shape[0], shape[1], shape[2], shape[3]};
  return g;
}

}  // namespace

ActivationEstimate denoiser_activations(const ZImageConfig& c, const ActivationQuery& q,
                                        const AttentionOptions& attention, int64_t materialized_weight_bytes) {
  const Grid g = grid_of(q.latent_shape);
  const double b = static_cast<double>(std::max<int64_t>(q.batch, 1));
  const double e = static_cast<double>(torch::elementSize(q.compute_dtype));
  const int64_t image = (g.frames / c.f_patch_size) * (g.height / c.patch_size) * (g.width / c.patch_size);
  const int64_t n_x = padded(image), n_c = padded(std::max<int64_t>(q.text_tokens, 1));
  const double u = static_cast<double>(n_x + n_c);
  const double d = static_cast<double>(c.dim), f = static_cast<double>(c.ffn_hidden());
  const double hd = static_cast<double>(c.head_dim());
  const double hidden = b * u * d * e;  // one [B, U, D] activation

  ActivationTally tally(absl::StrCat("z-image at ", scalar_type_name(q.compute_dtype), ", batch ",
                                     static_cast<int64_t>(b), " x ", n_x + n_c, " tokens (", image, " image + ",
                                     q.text_tokens, " text, padded) x dim ", c.dim));
  tally.add("held tokens 3 x hidden", 3 * hidden);
  tally.add("patches and captions", b * e * (n_x * c.patch_features() + n_c * c.cap_feat_dim));
  tally.add("RoPE and ids", b * u * (4 * hd * 4 + 2 * 3 * 8));
  AttentionShape shape;
  shape.batch = static_cast<int64_t>(b), shape.heads = c.n_heads, shape.head_dim = c.head_dim();
  shape.queries = shape.keys = n_x + n_c;
  const double scores =
      static_cast<double>(attention_scratch_bytes(shape, q.compute_dtype, q.device_is_cpu, attention));
  const double ffn = b * u * e * (4 * d + 2 * f), attention_half = 8 * hidden, inside = 6 * hidden + scores;
  const double block = std::max({ffn, attention_half, inside});
  tally.add(block == ffn ? absl::StrCat("block peak (FFN, ", c.ffn_hidden(), " wide)")
                         : block == attention_half ? "block peak (attention out)"
                                                   : "block peak (attention scores)",
            block);
  tally.add("modulation", b * e * 12 * d);
  tally.add("weight decode", static_cast<double>(materialized_weight_bytes));
  const double latent = b * static_cast<double>(g.channels * g.frames * g.height * g.width);
  tally.add("outputs", 2 * latent * e);
  if (q.denoise_loop) tally.add("denoise loop", 6 * latent * 4);
  return tally.finish_with_allocator_slack();
}

std::optional<ActivationQuery> ZImageModel::step_activation_query(const NamedTensors& inputs) const {
  const auto x = inputs.find("x");
  if (x == inputs.end() || x->second.dim() != 5) return std::nullopt;
  ActivationQuery q;
  q.latent_shape = x->second.sizes().slice(1).vec();
  q.batch = x->second.size(0);
  q.compute_dtype = compute_dtype(*this);
  for (const auto& [name, tensor] : inputs) {
    if (name == "cap_feats" && tensor.dim() == 3) q.text_tokens = std::max(q.text_tokens, tensor.size(1));
    if (name.rfind("cap_feats_", 0) == 0 && tensor.dim() == 2) q.text_tokens = std::max(q.text_tokens, tensor.size(0));
  }
  return q;
}

}  // namespace diffusiond
