#include "core/models/cosmos/cosmos_model.h"

#include <torch/utils.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/models/common/attention.h"
#include "core/models/common/layers.h"
#include "core/models/common/qwen_attention.h"
#include "core/models/common/tensor_text.h"
#include "core/models/cosmos/cosmos_params.h"
#include "core/util/cancellation_scope.h"
#include "core/util/exception_status.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

// The epsilons upstream hard-codes: the AdaLN LayerNorms and time_embed's
// RMSNorm 1e-6, the attention's q/k RMSNorm diffusers' Attention default.
constexpr double kCosmosNormEps = 1e-6;
constexpr double kCosmosQkNormEps = 1e-5;

}  // namespace

absl::StatusOr<std::unique_ptr<CosmosModel>> CosmosModel::create(const CosmosConfig& config,
                                                                 std::unique_ptr<WeightStore> weights,
                                                                 const ScheduleOptions& schedule) {
  if (absl::Status s = config.validate(); !s.ok()) return s;
  DIFFUSIOND_RETURN_IF_ERROR(check_weights_match_table(*weights, cosmos_parameter_table(config), "Cosmos"));
  return std::unique_ptr<CosmosModel>(new CosmosModel(config, std::move(weights), schedule));
}

absl::Status CosmosModel::check_inputs(const torch::Tensor& x, const torch::Tensor& t, const torch::Tensor& text,
                                       const torch::Tensor& padding_mask) const {
  const CosmosConfig& c = config_;
  const auto& p = c.patch_size;
  if (!x.defined() || x.dim() != 5 || x.size(0) < 1 || x.size(1) != c.in_channels || x.numel() == 0 ||
      x.size(2) % p[0] || x.size(3) % p[1] || x.size(4) % p[2] || !x.is_floating_point()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Cosmos hidden_states has shape ", shape_of(x), ", expected a float [B, ", c.in_channels,
                     ", T, H, W] with T, H, W positive multiples of the patch ", absl::StrJoin(p, "x")));
  }
  for (int axis = 0; axis < 3; ++axis) {
    if (x.size(2 + axis) / p[axis] > kCosmosMaxPositions) {
      return absl::InvalidArgumentError(absl::StrCat("Cosmos hidden_states ", shape_of(x), " has more than ",
                                                     kCosmosMaxPositions, " patches along axis ", axis + 2));
    }
  }
  const int64_t batch = x.size(0);
  if (!t.defined() || t.dim() != 1 || t.size(0) != batch || !t.is_floating_point()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Cosmos timestep has shape ", shape_of(t), ", expected a float [", batch, "] (sigma)"));
  }
  if (!text.defined() || text.dim() != 3 || text.size(0) != batch || text.size(1) < 1 ||
      text.size(2) != c.text_embed_dim || !text.is_floating_point()) {
    return absl::InvalidArgumentError(absl::StrCat("Cosmos encoder_hidden_states has shape ", shape_of(text),
                                                   ", expected a float [", batch, ", L, ", c.text_embed_dim,
                                                   "], L >= 1"));
  }
  // Upstream repeats the mask over the batch: it has one item.
  if (padding_mask.defined() &&
      (padding_mask.dim() != 4 || padding_mask.size(0) != 1 || padding_mask.size(1) != 1 ||
       padding_mask.size(2) < 1 || padding_mask.size(3) < 1 || !padding_mask.is_floating_point())) {
    return absl::InvalidArgumentError(absl::StrCat("Cosmos padding_mask has shape ", shape_of(padding_mask),
                                                   ", expected a float [1, 1, H, W] (pixels)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<torch::Tensor> CosmosModel::forward(const torch::Tensor& hidden_states, const torch::Tensor& timestep,
                                                   const torch::Tensor& encoder_hidden_states,
                                                   const torch::Tensor& padding_mask,
                                                   CosmosIntermediates* debug) const {
  DIFFUSIOND_RETURN_IF_ERROR(check_inputs(hidden_states, timestep, encoder_hidden_states, padding_mask));
  return status_of("the Cosmos forward", [&]() -> absl::StatusOr<torch::Tensor> {
    torch::NoGradGuard no_grad;
    // On a placement's device the inputs go there and the output comes back.
    const torch::Device device = forward_device(), home = hidden_states.device();
    if (device == home) return run(hidden_states, timestep, encoder_hidden_states, padding_mask, debug);
    return run(hidden_states.to(device), timestep.to(device), encoder_hidden_states.to(device),
               padding_mask.defined() ? padding_mask.to(device) : padding_mask, debug)
        .to(home);
  });
}

torch::Tensor CosmosModel::linear(const torch::Tensor& x, const std::string& prefix) const {
  return linear_layer(x, prefix + ".weight", "");
}

torch::Tensor CosmosModel::modulation(const std::string& prefix, const torch::Tensor& silu_emb) const {
  return linear(linear(silu_emb, prefix + ".linear_1"), prefix + ".linear_2");
}

torch::Tensor CosmosModel::run(const torch::Tensor& x_in, const torch::Tensor& t_in, const torch::Tensor& text_in,
                               const torch::Tensor& mask_in, CosmosIntermediates* debug) const {
  const CosmosConfig& c = config_;
  const torch::ScalarType dtype = compute_dtype(*this);
  const int64_t batch = x_in.size(0), d = c.hidden_size();
  const auto& [pt, ph, pw] = c.patch_size;
  const int64_t frames = x_in.size(2), height = x_in.size(3), width = x_in.size(4);
  const int64_t t = frames / pt, h = height / ph, w = width / pw, tokens = t * h * w;
  const auto options = x_in.options().dtype(dtype);

  // The padding mask, resized to the latents by nearest neighbour (pixel
  // floor(i * Hp / H)), joins as the LAST channel of every frame.
  torch::Tensor x = x_in.to(dtype);
  if (c.concat_padding_mask) {
    const torch::Tensor mask =
        mask_in.defined()
            ? torch::upsample_nearest2d(mask_in.to(torch::kFloat32), {height, width}).to(dtype)
            : torch::zeros({1, 1, height, width}, options);
    x = torch::cat({x, mask.unsqueeze(2).expand({batch, 1, frames, height, width})}, 1);
  }
  if (debug != nullptr) debug->patch_embed_in = x[0];
  // Patchify: features (c, pt, ph, pw), channel first; tokens (t, h, w)
  // row-major.
  const int64_t channels = x.size(1);
  const torch::Tensor patches = x.reshape({batch, channels, t, pt, h, ph, w, pw})
                                    .permute({0, 2, 4, 6, 1, 3, 5, 7})
                                    .reshape({batch, tokens, c.patch_features()});
  x = linear(patches, "patch_embed.proj");

  // Time: the sinusoid of sigma itself (float32), temb through the MLP, and
  // the sinusoid RMS-normed as the modulations' input.
  const torch::Tensor sinusoid = timestep_features(t_in.reshape({-1}).to(torch::kFloat32), d);
  const torch::Tensor projected = sinusoid.to(dtype);
  const torch::Tensor temb = linear(torch::silu(linear(projected, "time_embed.t_embedder.linear_1")),
                                    "time_embed.t_embedder.linear_2");
  const torch::Tensor embedded = rms_norm(projected, param("time_embed.norm.weight"), kCosmosNormEps);
  const torch::Tensor silu_emb = torch::silu(embedded);
  const auto [cos, sin] = cosmos_rope_tables(c, t, h, w, x.device());
  if (debug != nullptr) {
    debug->t_sinusoid = sinusoid[0];
    debug->embedded_timestep = embedded[0];
    debug->temb = temb[0];
    debug->patch_embed = x[0];
    debug->rope_cos = cos;
    debug->rope_sin = sin;
    debug->blocks.clear();
  }
  const torch::Tensor text = text_in.to(dtype);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    // Between blocks: a cancelled step stops within one block.
    check_cancelled();
    x = block(absl::StrCat("transformer_blocks.", l), x, text, silu_emb, temb, cos, sin, l == 0 ? debug : nullptr);
    if (debug != nullptr) debug->blocks.push_back(x[0]);
  }

  // The final layer: its own modulation plus temb's first two chunks
  // (shift, scale), no gate.
  const torch::Tensor mod = (modulation("norm_out", silu_emb) + temb.narrow(1, 0, 2 * d)).unsqueeze(1);
  x = modulated_layer_norm(x, mod.narrow(2, d, d), mod.narrow(2, 0, d), kCosmosNormEps);
  if (debug != nullptr) debug->norm_out = x[0];
  x = linear(x, "proj_out");
  if (debug != nullptr) debug->proj_out = x[0];
  // Unpatchify: features (ph, pw, pt, c), channel LAST.
  return x.reshape({batch, t, h, w, ph, pw, pt, c.out_channels})
      .permute({0, 7, 1, 6, 2, 4, 3, 5})
      .reshape({batch, c.out_channels, frames, height, width});
}

torch::Tensor CosmosModel::block(const std::string& prefix, torch::Tensor x, const torch::Tensor& text,
                                 const torch::Tensor& silu_emb, const torch::Tensor& temb, const torch::Tensor& cos,
                                 const torch::Tensor& sin, CosmosIntermediates* debug) const {
  const int64_t d = config_.hidden_size();
  // Each of norm1-3: its AdaLN-LoRA plus the whole temb, chunks (shift,
  // scale, gate).
  const auto modulated = [&](const char* norm) {
    const torch::Tensor mod = (modulation(absl::StrCat(prefix, ".", norm), silu_emb) + temb).unsqueeze(1);
    return std::make_pair(modulated_layer_norm(x, mod.narrow(2, d, d), mod.narrow(2, 0, d), kCosmosNormEps),
                          mod.narrow(2, 2 * d, d));
  };
  auto [h, gate] = modulated("norm1");
  const torch::Tensor self_attn = attention_block(prefix + ".attn1", h, h, cos, sin);
  if (debug != nullptr) {
    debug->block0_norm1 = h[0];
    debug->block0_gate1 = gate[0];
    debug->block0_attn1 = self_attn[0];
  }
  x = x + gate * self_attn;

  std::tie(h, gate) = modulated("norm2");
  const torch::Tensor cross_attn = attention_block(prefix + ".attn2", h, text, {}, {});
  if (debug != nullptr) debug->block0_attn2 = cross_attn[0];
  x = x + gate * cross_attn;

  std::tie(h, gate) = modulated("norm3");
  // The projection goes before ff.net.2 runs, not at the end of one full
  // expression: held beside the GELU's output, the two widest tensors of the
  // block split the arena's free space so that ff.net.2's decoded FP8
  // weight found no room in one piece (a refusal per block, and the arena's
  // pages faulted in again after each).
  const torch::Tensor hidden = torch::gelu(linear(h, prefix + ".ff.net.0.proj"));
  const torch::Tensor ff = linear(hidden, prefix + ".ff.net.2");
  return x + gate * ff;
}

torch::Tensor CosmosModel::attention_block(const std::string& prefix, const torch::Tensor& h,
                                           const torch::Tensor& context, const torch::Tensor& cos,
                                           const torch::Tensor& sin) const {
  const CosmosConfig& c = config_;
  const int64_t b = h.size(0), s = h.size(1), l = context.size(1);
  const int64_t heads = c.num_attention_heads, hd = c.attention_head_dim;
  // Heads first, then the per-head RMSNorm, then RoPE (self-attention only).
  const auto split = [&](const torch::Tensor& in, const char* proj, int64_t len) {
    return linear(in, absl::StrCat(prefix, ".", proj)).view({b, len, heads, hd}).transpose(1, 2);
  };
  const auto normed = [&](const torch::Tensor& in, const char* proj, int64_t len, const char* norm) {
    torch::Tensor x = rms_norm(split(in, proj, len), param(absl::StrCat(prefix, ".", norm, ".weight")),
                               kCosmosQkNormEps);
    // RoPE at float32, as upstream's apply_rotary_emb computes it.
    if (cos.defined()) x = apply_half_split_rope(x.to(torch::kFloat32), cos, sin).to(x.scalar_type());
    return x.contiguous();
  };
  const torch::Tensor q = normed(h, "to_q", s, "norm_q");
  const torch::Tensor k = normed(context, "to_k", l, "norm_k");
  const torch::Tensor v = split(context, "to_v", l).contiguous();
  const torch::Tensor out = attention(q, k, v, torch::Tensor(), attention_options_);
  return linear(out.transpose(1, 2).reshape({b, s, heads * hd}), prefix + ".to_out.0");
}

}  // namespace diffusiond
