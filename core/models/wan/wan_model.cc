#include "core/models/wan/wan_model.h"

#include <torch/utils.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/models/wan/wan_params.h"
#include "core/util/cancellation_scope.h"
#include "core/util/exception_status.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

std::string wan_shape_text(const torch::Tensor& t) {
  return t.defined() ? absl::StrCat("[", absl::StrJoin(t.sizes(), ", "), "]") : "undefined";
}

// LayerNorm in float32 whatever the compute dtype (upstream's FP32LayerNorm).
torch::Tensor wan_layer_norm32(const torch::Tensor& x, double eps, const torch::Tensor& weight = {},
                               const torch::Tensor& bias = {}) {
  const int64_t d = x.size(-1);
  return torch::layer_norm(x.to(torch::kFloat32), {d}, weight.defined() ? weight.to(torch::kFloat32) : weight,
                           bias.defined() ? bias.to(torch::kFloat32) : bias, eps);
}

}  // namespace

absl::StatusOr<std::unique_ptr<WanModel>> WanModel::create(const WanConfig& config,
                                                           std::unique_ptr<WeightStore> weights,
                                                           const ScheduleOptions& schedule) {
  if (absl::Status s = config.validate(); !s.ok()) return s;
  DIFFUSIOND_RETURN_IF_ERROR(check_weights_match_table(*weights, wan_parameter_table(config), "Wan"));
  return std::unique_ptr<WanModel>(new WanModel(config, std::move(weights), schedule));
}

WanModel::WanModel(const WanConfig& config, std::unique_ptr<WeightStore> weights, const ScheduleOptions& schedule)
    : ConfiguredDenoiser(config, std::move(weights), schedule) {
  // Upstream's tables: angles and their cos/sin in float64, then float32.
  // (MultiAxisRope rounds the angles to float32 first, which at positions
  // near rope_max_seq_len moves cos/sin by ~1e-5.)
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  for (const int64_t d : config.rope_axes_dims()) {
    const torch::Tensor freqs = 1.0 / torch::pow(kWanRopeTheta, torch::arange(0, d, 2, f64) / static_cast<double>(d));
    const torch::Tensor angles = torch::outer(torch::arange(config.rope_max_seq_len, f64), freqs);
    rope_cos_.push_back(torch::cos(angles).to(torch::kFloat32));
    rope_sin_.push_back(torch::sin(angles).to(torch::kFloat32));
  }
}

absl::Status WanModel::check_inputs(const torch::Tensor& x, const torch::Tensor& t, const torch::Tensor& text) const {
  const WanConfig& c = config_;
  const auto& p = c.patch_size;
  if (!x.defined() || x.dim() != 5 || x.size(0) < 1 || x.size(1) != c.in_channels || x.size(2) % p[0] ||
      x.size(3) % p[1] || x.size(4) % p[2] || x.numel() == 0 || !x.is_floating_point()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Wan hidden_states has shape ", wan_shape_text(x), ", expected a float [B, ", c.in_channels,
                     ", F, H, W] with F, H, W multiples of the patch ", absl::StrJoin(p, "x")));
  }
  const int64_t batch = x.size(0);
  if (!t.defined() || t.numel() != batch ||
      !(t.is_floating_point() || t.dtype() == torch::kInt64 || t.dtype() == torch::kInt32)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Wan timestep has shape ", wan_shape_text(t), ", expected [", batch, "] numbers"));
  }
  if (!text.defined() || text.dim() != 3 || text.size(0) != batch || text.size(1) < 1 || text.size(2) != c.text_dim ||
      !text.is_floating_point()) {
    return absl::InvalidArgumentError(absl::StrCat("Wan encoder_hidden_states has shape ", wan_shape_text(text),
                                                   ", expected a float [", batch, ", L, ", c.text_dim, "], L >= 1"));
  }
  for (int axis = 0; axis < 3; ++axis) {
    if (x.size(2 + axis) / p[axis] > c.rope_max_seq_len) {
      return absl::InvalidArgumentError(absl::StrCat("Wan latents ", wan_shape_text(x),
                                                     " need more than rope_max_seq_len ", c.rope_max_seq_len,
                                                     " positions along axis ", axis));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<torch::Tensor> WanModel::forward(const torch::Tensor& hidden_states, const torch::Tensor& timestep,
                                                const torch::Tensor& encoder_hidden_states,
                                                WanIntermediates* debug) const {
  DIFFUSIOND_RETURN_IF_ERROR(check_inputs(hidden_states, timestep, encoder_hidden_states));
  return status_of("the Wan forward", [&]() -> absl::StatusOr<torch::Tensor> {
    torch::NoGradGuard no_grad;
    // On a placement's device the inputs go there and the output comes back.
    const torch::Device device = forward_device(), home = hidden_states.device();
    if (device == home) return run(hidden_states, timestep, encoder_hidden_states, debug);
    return run(hidden_states.to(device), timestep.to(device), encoder_hidden_states.to(device), debug).to(home);
  });
}

torch::Tensor WanModel::linear(const torch::Tensor& x, const std::string& prefix) const {
  return linear_layer(x, prefix + ".weight", prefix + ".bias");
}

std::pair<torch::Tensor, torch::Tensor> WanModel::rope_for(int64_t batch, int64_t f, int64_t h, int64_t w,
                                                           torch::Device device) const {
  // Token (f, h, w) takes positions f, h, w, 0-based and not centred; the
  // axes' channels are concatenated t | h | w.
  const int64_t sizes[3] = {f, h, w};
  std::vector<torch::Tensor> cos, sin;
  for (int axis = 0; axis < 3; ++axis) {
    std::vector<int64_t> view = {1, 1, 1, -1}, expand = {f, h, w, -1};
    view[axis] = sizes[axis];
    cos.push_back(rope_cos_[axis].narrow(0, 0, sizes[axis]).view(view).expand(expand));
    sin.push_back(rope_sin_[axis].narrow(0, 0, sizes[axis]).view(view).expand(expand));
  }
  const auto table = [&](const std::vector<torch::Tensor>& parts) {
    const torch::Tensor one = torch::cat(parts, -1).reshape({f * h * w, -1}).to(device);
    return one.unsqueeze(0).expand({batch, -1, -1}).contiguous();
  };
  return {table(cos), table(sin)};
}

torch::Tensor WanModel::run(const torch::Tensor& x_in, const torch::Tensor& t_in, const torch::Tensor& text_in,
                            WanIntermediates* debug) const {
  const WanConfig& c = config_;
  const torch::ScalarType dtype = compute_dtype(*this);
  const int64_t batch = x_in.size(0), channels = c.in_channels, d = c.inner_dim();
  const auto& [pt, ph, pw] = c.patch_size;
  const int64_t frames = x_in.size(2), height = x_in.size(3), width = x_in.size(4);
  const int64_t f = frames / pt, h = height / ph, w = width / pw, tokens = f * h * w;

  // Patchify: Conv3d with kernel = stride = patch is a Linear over each
  // patch's features ordered (c, dt, dy, dx); tokens (f, h, w) row-major.
  const torch::Tensor patches = x_in.to(dtype)
                                    .reshape({batch, channels, f, pt, h, ph, w, pw})
                                    .permute({0, 2, 4, 6, 1, 3, 5, 7})
                                    .reshape({batch, tokens, c.patch_features()});
  torch::Tensor x =
      torch::linear(patches, param("patch_embedding.weight").reshape({d, -1}), param("patch_embedding.bias"));

  // Time: the sinusoid of t itself (0..1000), float32; temb feeds both the
  // blocks' projection and, raw, the final modulation.
  const torch::Tensor sinusoid = timestep_features(t_in.reshape({-1}).to(torch::kFloat32), c.freq_dim);
  const torch::Tensor temb =
      linear(torch::silu(linear(sinusoid.to(dtype), "condition_embedder.time_embedder.linear_1")),
             "condition_embedder.time_embedder.linear_2");
  const torch::Tensor timestep_proj = linear(torch::silu(temb), "condition_embedder.time_proj").view({batch, 6, d});
  // Text: every row, zero padding included (no mask: the padded rows, now
  // biases, are keys and values like the others).
  const torch::Tensor text =
      linear(torch::gelu(linear(text_in.to(dtype), "condition_embedder.text_embedder.linear_1"), "tanh"),
             "condition_embedder.text_embedder.linear_2");
  const auto [cos, sin] = rope_for(batch, f, h, w, x.device());
  if (debug != nullptr) {
    debug->t_sinusoid = sinusoid[0];
    debug->temb = temb[0];
    debug->timestep_proj = timestep_proj[0].reshape({-1});
    debug->text_embed = text[0];
    debug->patch_embed = x[0];
    debug->rope_cos = cos[0];
    debug->rope_sin = sin[0];
    debug->blocks.clear();
  }

  for (int64_t l = 0; l < c.num_layers; ++l) {
    // Between blocks: a cancelled step stops within one block.
    check_cancelled();
    x = block(absl::StrCat("blocks.", l), x, text, timestep_proj, cos, sin);
    if (debug != nullptr) debug->blocks.push_back(x[0]);
  }

  // The final layer: the head's table plus the raw temb (no SiLU, no
  // projection), chunks (shift, scale).
  const torch::Tensor mod = param("scale_shift_table").to(torch::kFloat32) + temb.to(torch::kFloat32).unsqueeze(1);
  const torch::Tensor shift = mod.narrow(1, 0, 1), scale = mod.narrow(1, 1, 1);
  const torch::Tensor normed = wan_layer_norm32(x, c.eps);
  if (debug != nullptr) debug->norm_out = normed[0].to(dtype);
  x = linear((normed * (1 + scale) + shift).to(dtype), "proj_out");
  // Unpatchify: features (dt, dy, dx, c) back to [B, C, F, H, W].
  return x.view({batch, f, h, w, pt, ph, pw, c.out_channels})
      .permute({0, 7, 1, 4, 2, 5, 3, 6})
      .reshape({batch, c.out_channels, frames, height, width});
}

torch::Tensor WanModel::block(const std::string& prefix, torch::Tensor x, const torch::Tensor& text,
                              const torch::Tensor& timestep_proj, const torch::Tensor& cos,
                              const torch::Tensor& sin) const {
  const WanConfig& c = config_;
  const torch::ScalarType dtype = x.scalar_type();
  // Modulation in float32: the block's table plus the projected time,
  // chunks (shift, scale, gate) for self-attention then for the FFN.
  const torch::Tensor mod =
      param(prefix + ".scale_shift_table").to(torch::kFloat32) + timestep_proj.to(torch::kFloat32);
  const auto chunk = [&](int64_t i) { return mod.narrow(1, i, 1); };
  const torch::Tensor shift_msa = chunk(0), scale_msa = chunk(1), gate_msa = chunk(2);
  const torch::Tensor shift_ffn = chunk(3), scale_ffn = chunk(4), gate_ffn = chunk(5);

  torch::Tensor h = (wan_layer_norm32(x, c.eps) * (1 + scale_msa) + shift_msa).to(dtype);
  const torch::Tensor self_attn = attention_block(prefix + ".attn1", h, h, cos, sin);
  x = (x.to(torch::kFloat32) + self_attn * gate_msa).to(dtype);

  // Cross-attention: no modulation, no gate, no RoPE.
  h = c.cross_attn_norm
          ? wan_layer_norm32(x, c.eps, param(prefix + ".norm2.weight"), param(prefix + ".norm2.bias")).to(dtype)
          : x;
  x = x + attention_block(prefix + ".attn2", h, text, {}, {});

  h = (wan_layer_norm32(x, c.eps) * (1 + scale_ffn) + shift_ffn).to(dtype);
  const torch::Tensor ffn = linear(torch::gelu(linear(h, prefix + ".ffn.net.0.proj"), "tanh"), prefix + ".ffn.net.2");
  return (x.to(torch::kFloat32) + ffn.to(torch::kFloat32) * gate_ffn).to(dtype);
}

torch::Tensor WanModel::attention_block(const std::string& prefix, const torch::Tensor& h, const torch::Tensor& context,
                                        const torch::Tensor& cos, const torch::Tensor& sin) const {
  const WanConfig& c = config_;
  const int64_t b = h.size(0), s = h.size(1), l = context.size(1);
  const int64_t heads = c.num_attention_heads, hd = c.attention_head_dim;
  // RMSNorm over the whole inner width (all heads jointly), before the
  // split into heads.
  const auto normed = [&](const torch::Tensor& in, const char* proj, const char* norm) {
    const torch::Tensor out = linear(in, absl::StrCat(prefix, ".", proj));
    return c.qk_norm ? rms_norm(out, param(absl::StrCat(prefix, ".", norm, ".weight")), c.eps) : out;
  };
  const auto split = [&](const torch::Tensor& in, int64_t len, bool rope) {
    const torch::Tensor heads_view = in.view({b, len, heads, hd});
    return rope ? norm_rope_heads(heads_view, torch::Tensor(), c.eps, cos, sin)
                : heads_view.transpose(1, 2).contiguous();
  };
  const bool rope = cos.defined();
  const torch::Tensor q = split(normed(h, "to_q", "norm_q"), s, rope);
  const torch::Tensor k = split(normed(context, "to_k", "norm_k"), l, rope);
  const torch::Tensor v = split(linear(context, prefix + ".to_v"), l, false);
  const torch::Tensor out = attention(q, k, v, torch::Tensor(), attention_options_);
  return linear(out.transpose(1, 2).reshape({b, s, heads * hd}), prefix + ".to_out.0");
}

}  // namespace diffusiond
