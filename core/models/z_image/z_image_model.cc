#include "core/models/z_image/z_image_model.h"

#include <torch/nn/utils/rnn.h>
#include <torch/utils.h>

#include <algorithm>
#include <new>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/models/z_image/z_image_params.h"
#include "core/util/exception_status.h"
#include "core/util/status_macros.h"
#include "core/util/cancellation_scope.h"

namespace diffusiond {
namespace {

constexpr double kQkNormEps = 1e-5;
constexpr double kFinalNormEps = 1e-6;

// Repeats the last row of `rows` `pad` times.
torch::Tensor pad_rows(const torch::Tensor& rows, int64_t pad) {
  if (pad == 0) return rows;
  return torch::cat({rows, rows.narrow(0, rows.size(0) - 1, 1).expand({pad, rows.size(1)})}, 0);
}

// [n, 3] int64 ids (start + f, h, w) over an f × h × w grid.
torch::Tensor grid_ids(int64_t f, int64_t h, int64_t w, int64_t f_start, torch::Device device) {
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(device);
  std::vector<torch::Tensor> axes = torch::meshgrid(
      {torch::arange(f_start, f_start + f, i64), torch::arange(h, i64), torch::arange(w, i64)}, "ij");
  return torch::stack(axes, -1).reshape({-1, 3});
}

// Pads per-item sequences to one batch [items, longest, ...].
torch::Tensor pad_items(const std::vector<torch::Tensor>& items) {
  return torch::nn::utils::rnn::pad_sequence(items, /*batch_first=*/true);
}

// A [items, longest] mask, true on each item's real (not batch-padding) positions.
// Built on the CPU and moved once: filling rows on a device would be one
// launch per item. Undefined when no item is padded, as upstream's: a mask
// keeps a device's SDPA off its flash kernel, and attention() cannot drop an
// all-true one there without reading it back, which stalls the queue.
torch::Tensor item_mask(const std::vector<int64_t>& lengths, torch::Device device) {
  const int64_t longest = *std::max_element(lengths.begin(), lengths.end());
  if (std::all_of(lengths.begin(), lengths.end(), [&](int64_t n) { return n == longest; })) return {};
  torch::Tensor mask = torch::zeros({static_cast<int64_t>(lengths.size()), longest}, torch::kBool);
  for (size_t i = 0; i < lengths.size(); ++i) mask[i].narrow(0, 0, lengths[i]).fill_(true);
  return mask.to(device);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ZImageModel>> ZImageModel::create(
    const ZImageConfig& config, std::unique_ptr<WeightStore> weights, const ScheduleOptions& schedule) {
  if (absl::Status s = config.validate(); !s.ok()) return s;
  DIFFUSIOND_RETURN_IF_ERROR(check_weights_match_table(*weights, z_image_parameter_table(config), "Z-Image"));
  return std::unique_ptr<ZImageModel>(new ZImageModel(config, std::move(weights), schedule));
}

ZImageModel::ZImageModel(const ZImageConfig& config, std::unique_ptr<WeightStore> weights,
                         const ScheduleOptions& schedule)
    : ConfiguredDenoiser(config, std::move(weights), schedule),
      rope_(config.rope_theta, {config.axes_dims.begin(), config.axes_dims.end()},
            {config.axes_lens.begin(), config.axes_lens.end()}) {}

absl::Status ZImageModel::check_inputs(const std::vector<torch::Tensor>& x, const torch::Tensor& t,
                                       const std::vector<torch::Tensor>& cap_feats) const {
  const ZImageConfig& c = config_;
  if (x.empty() || x.size() != cap_feats.size()) {
    return absl::InvalidArgumentError(absl::StrCat("Z-Image forward got ", x.size(),
                                                   " latents and ", cap_feats.size(),
                                                   " captions; expected the same number, at least 1"));
  }
  if (!t.defined() || t.numel() != static_cast<int64_t>(x.size())) {
    return absl::InvalidArgumentError(absl::StrCat("Z-Image forward got ", t.defined() ? t.numel() : 0,
                                                   " timesteps for a batch of ", x.size()));
  }
  for (size_t i = 0; i < x.size(); ++i) {
    const torch::Tensor& xi = x[i];
    if (!xi.defined() || xi.dim() != 4 || xi.size(0) != c.in_channels || xi.size(1) % c.f_patch_size ||
        xi.size(2) % c.patch_size || xi.size(3) % c.patch_size || xi.numel() == 0 ||
        !xi.is_floating_point()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "latent ", i, " has shape [", xi.defined() ? absl::StrJoin(xi.sizes(), ", ") : "", "], but Z-Image expects a float [",
          c.in_channels, ", F, H, W] with H and W multiples of ", c.patch_size));
    }
    const torch::Tensor& ci = cap_feats[i];
    if (!ci.defined() || ci.dim() != 2 || ci.size(1) != c.cap_feat_dim || ci.size(0) == 0 ||
        !ci.is_floating_point()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "caption ", i, " has shape [", ci.defined() ? absl::StrJoin(ci.sizes(), ", ") : "",
          "], but Z-Image expects a float [L, ", c.cap_feat_dim, "] with L >= 1"));
    }
    const int64_t cap_padded = ci.size(0) + z_image_padding_for(ci.size(0));
    const int64_t f_tokens = xi.size(1) / c.f_patch_size;
    if (cap_padded + 1 + f_tokens > c.axes_lens[0] || xi.size(2) / c.patch_size > c.axes_lens[1] ||
        xi.size(3) / c.patch_size > c.axes_lens[2]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "item ", i, " needs RoPE positions beyond the model's axes_lens [", c.axes_lens[0], ", ",
          c.axes_lens[1], ", ", c.axes_lens[2], "] (caption ", ci.size(0), " tokens, latent ",
          absl::StrJoin(xi.sizes(), "x"), ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<torch::Tensor>> ZImageModel::forward(
    const std::vector<torch::Tensor>& x, const torch::Tensor& t,
    const std::vector<torch::Tensor>& cap_feats) const {
  if (absl::Status s = check_inputs(x, t, cap_feats); !s.ok()) return s;
  return status_of("the Z-Image forward", [&]() -> absl::StatusOr<std::vector<torch::Tensor>> {
    torch::NoGradGuard no_grad;
    // On a placement's device the inputs go there and the outputs come back.
    const torch::Device device = forward_device(), home = x[0].device();
    if (device == home) return run(x, t, cap_feats);
    const auto to_device = [&](const std::vector<torch::Tensor>& items) {
      std::vector<torch::Tensor> out;
      for (const torch::Tensor& item : items) out.push_back(item.to(device));
      return out;
    };
    std::vector<torch::Tensor> out = run(to_device(x), t.to(device), to_device(cap_feats));
    for (torch::Tensor& item : out) item = item.to(home);
    return out;
  });
}

torch::Tensor ZImageModel::linear(const torch::Tensor& x, const std::string& prefix, bool bias) const {
  return linear_layer(x, prefix + ".weight", bias ? prefix + ".bias" : "");
}

// Patchifies and pads each item; caption ids (1 + i, 0, 0), image ids after them.
ZImageModel::Patchified ZImageModel::patchify(const std::vector<torch::Tensor>& x_in,
                                              const std::vector<torch::Tensor>& cap_in) const {
  const ZImageConfig& c = config_;
  const torch::ScalarType dtype = compute_dtype(*this);
  const int64_t p = c.patch_size, pf = c.f_patch_size, channels = c.in_channels;
  Patchified out;
  auto& [patches, x_ids, x_pad, caps, cap_ids, cap_pad, sizes] = out;
  const torch::Device device = x_in[0].device();
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(device);
  for (int64_t i = 0; i < static_cast<int64_t>(x_in.size()); ++i) {
    const torch::Tensor cap = cap_in[i].to(dtype);
    const int64_t cap_len = cap.size(0), cap_extra = z_image_padding_for(cap_len);
    caps.push_back(pad_rows(cap, cap_extra));
    cap_ids.push_back(grid_ids(cap_len + cap_extra, 1, 1, 1, device));
    cap_pad.push_back(torch::arange(cap_len + cap_extra, i64) >= cap_len);

    const torch::Tensor img = x_in[i].to(dtype);
    const int64_t F = img.size(1), H = img.size(2), W = img.size(3);
    sizes.push_back({F, H, W});
    const int64_t ft = F / pf, ht = H / p, wt = W / p;
    const torch::Tensor rows = img.view({channels, ft, pf, ht, p, wt, p})
                                   .permute({1, 3, 5, 2, 4, 6, 0})
                                   .reshape({ft * ht * wt, pf * p * p * channels});
    const int64_t n = rows.size(0), extra = z_image_padding_for(n);
    patches.push_back(pad_rows(rows, extra));
    torch::Tensor ids = grid_ids(ft, ht, wt, cap_len + cap_extra + 1, device);
    if (extra > 0) ids = torch::cat({ids, torch::zeros({extra, 3}, i64)}, 0);
    x_ids.push_back(ids);
    x_pad.push_back(torch::arange(n + extra, i64) >= n);
  }
  return out;
}

// The final layer (LayerNorm scaled by adaLN, then the projection) and the
// unpatchify of each item back to [C, F, H, W].
std::vector<torch::Tensor> ZImageModel::final_layer(torch::Tensor ub, const torch::Tensor& adaln,
                                                    const std::vector<std::array<int64_t, 3>>& sizes) const {
  const ZImageConfig& c = config_;
  const int64_t p = c.patch_size, pf = c.f_patch_size, channels = c.in_channels;
  const std::string key = c.patch_key();
  const int64_t batch = static_cast<int64_t>(sizes.size());
  const std::string final_prefix = "all_final_layer." + key;
  const torch::Tensor scale = 1.0 + linear(torch::silu(adaln), final_prefix + ".adaLN_modulation.1", true);
  ub = torch::layer_norm(ub, {c.dim}, {}, {}, kFinalNormEps) * scale.unsqueeze(1);
  ub = linear(ub, final_prefix + ".linear", true);

  std::vector<torch::Tensor> out;
  for (int64_t i = 0; i < batch; ++i) {
    const auto [F, H, W] = sizes[i];
    const int64_t ft = F / pf, ht = H / p, wt = W / p;
    out.push_back(ub[i]
                      .narrow(0, 0, ft * ht * wt)
                      .view({ft, ht, wt, pf, p, p, channels})
                      .permute({6, 0, 3, 1, 4, 2, 5})
                      .reshape({channels, F, H, W}));
  }
  return out;
}

std::vector<torch::Tensor> ZImageModel::run(const std::vector<torch::Tensor>& x_in,
                                            const torch::Tensor& t_in,
                                            const std::vector<torch::Tensor>& cap_in) const {
  const ZImageConfig& c = config_;
  const torch::ScalarType dtype = compute_dtype(*this);
  const int64_t batch = static_cast<int64_t>(x_in.size());
  const std::string key = c.patch_key();

  // Timestep embedding: sinusoid in float32, the MLP at the compute dtype.
  const torch::Tensor t_scaled = t_in.reshape({-1}).to(torch::kFloat32) * static_cast<float>(c.t_scale);
  torch::Tensor adaln = timestep_features(t_scaled, 256).to(dtype);
  adaln = linear(torch::silu(linear(adaln, "t_embedder.mlp.0", true)), "t_embedder.mlp.2", true);

  const Patchified in = patchify(x_in, cap_in);
  const std::vector<torch::Tensor>&patches = in.patches, &x_ids = in.x_ids, &x_pad = in.x_pad, &caps = in.caps,
                                   &cap_ids = in.cap_ids, &cap_pad = in.cap_pad;
  const auto lengths = [](const std::vector<torch::Tensor>& items) {
    std::vector<int64_t> out;
    for (const torch::Tensor& t : items) out.push_back(t.size(0));
    return out;
  };
  const std::vector<int64_t> x_lens = lengths(patches), cap_lens = lengths(caps);

  // Embed; padding positions take the learned pad tokens.
  torch::Tensor x = linear(torch::cat(patches, 0), "all_x_embedder." + key, true);
  x.index_put_({torch::cat(x_pad, 0)}, param("x_pad_token").to(x.scalar_type()));
  torch::Tensor cap = torch::cat(caps, 0);
  cap = linear(rms_norm(cap, param("cap_embedder.0.weight"), c.norm_eps), "cap_embedder.1", true);
  cap.index_put_({torch::cat(cap_pad, 0)}, param("cap_pad_token").to(cap.scalar_type()));

  const auto rope_for = [&](const std::vector<torch::Tensor>& ids, const std::vector<int64_t>& lens) {
    auto [cos, sin] = rope_.lookup(torch::cat(ids, 0));
    std::vector<torch::Tensor> cos_items = cos.split_with_sizes(lens, 0), sin_items = sin.split_with_sizes(lens, 0);
    return std::make_pair(cos_items, sin_items);
  };
  auto [x_cos_items, x_sin_items] = rope_for(x_ids, x_lens);
  auto [cap_cos_items, cap_sin_items] = rope_for(cap_ids, cap_lens);

  // Noise refiner on image tokens (modulated), context refiner on captions.
  torch::Tensor xb = pad_items(x.split_with_sizes(x_lens, 0));
  const torch::Tensor x_mask = item_mask(x_lens, x.device());
  const torch::Tensor x_cos = pad_items(x_cos_items), x_sin = pad_items(x_sin_items);
  // check_cancelled() between blocks: a cancelled step stops within one
  // block instead of running the whole forward.
  for (int64_t l = 0; l < c.n_refiner_layers; ++l) {
    check_cancelled();
    xb = block(absl::StrCat("noise_refiner.", l), xb, x_mask, x_cos, x_sin, adaln);
  }
  torch::Tensor cb = pad_items(cap.split_with_sizes(cap_lens, 0));
  const torch::Tensor cap_mask = item_mask(cap_lens, x.device());
  const torch::Tensor cap_cos = pad_items(cap_cos_items), cap_sin = pad_items(cap_sin_items);
  for (int64_t l = 0; l < c.n_refiner_layers; ++l) {
    check_cancelled();
    cb = block(absl::StrCat("context_refiner.", l), cb, cap_mask, cap_cos, cap_sin, torch::Tensor());
  }

  // Main layers on [image tokens, caption tokens] per item.
  std::vector<torch::Tensor> unified, u_cos, u_sin;
  std::vector<int64_t> u_lens;
  for (int64_t i = 0; i < batch; ++i) {
    u_lens.push_back(x_lens[i] + cap_lens[i]);
    unified.push_back(torch::cat({xb[i].narrow(0, 0, x_lens[i]), cb[i].narrow(0, 0, cap_lens[i])}, 0));
    u_cos.push_back(torch::cat({x_cos_items[i], cap_cos_items[i]}, 0));
    u_sin.push_back(torch::cat({x_sin_items[i], cap_sin_items[i]}, 0));
  }
  torch::Tensor ub = pad_items(unified);
  const torch::Tensor u_mask = item_mask(u_lens, x.device());
  const torch::Tensor ucos = pad_items(u_cos), usin = pad_items(u_sin);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    check_cancelled();
    ub = block(absl::StrCat("layers.", l), ub, u_mask, ucos, usin, adaln);
  }

  return final_layer(ub, adaln, in.sizes);
}

torch::Tensor ZImageModel::block(const std::string& prefix, torch::Tensor x, const torch::Tensor& mask,
                                 const torch::Tensor& cos, const torch::Tensor& sin,
                                 const torch::Tensor& adaln) const {
  const double eps = config_.norm_eps;
  const auto weight = [&](const char* name) { return param(absl::StrCat(prefix, ".", name, ".weight")); };
  const auto ffn = [&](const torch::Tensor& h) {
    const std::string ff = prefix + ".feed_forward";
    // silu(w1 h) * w3 h, in place: the hidden activations are the block's
    // largest, so no third buffer of their size.
    // w3's output dies with this statement, before w2 runs.
    const torch::Tensor hidden = silu_mul_(linear(h, ff + ".w1", false), linear(h, ff + ".w3", false));
    return linear(hidden, ff + ".w2", false);
  };
  // Upstream: x + gate * norm2(f(norm1(x) * scale)); without adaLN (the
  // context refiner) scale and gate are absent.
  torch::Tensor scale_msa, gate_msa, scale_mlp, gate_mlp;
  if (adaln.defined()) {
    const std::vector<torch::Tensor> mod =
        linear(adaln, prefix + ".adaLN_modulation.0", true).unsqueeze(1).chunk(4, 2);
    scale_msa = 1.0 + mod[0], gate_msa = mod[1].tanh();
    scale_mlp = 1.0 + mod[2], gate_mlp = mod[3].tanh();
  }
  const torch::Tensor attn =
      attention_block(prefix, rms_norm_scaled(x, weight("attention_norm1"), eps, scale_msa), mask, cos, sin);
  x = add_gated_rms_norm(x, attn, weight("attention_norm2"), eps, gate_msa);
  return add_gated_rms_norm(x, ffn(rms_norm_scaled(x, weight("ffn_norm1"), eps, scale_mlp)),
                            weight("ffn_norm2"), eps, gate_mlp);
}

torch::Tensor ZImageModel::attention_block(const std::string& prefix, const torch::Tensor& h,
                                           const torch::Tensor& mask, const torch::Tensor& cos,
                                           const torch::Tensor& sin) const {
  const int64_t b = h.size(0), s = h.size(1), heads = config_.n_heads, hd = config_.head_dim();
  const std::string a = prefix + ".attention";
  const auto heads_of = [&](const char* proj, const char* norm) {
    return norm_rope_heads(linear(h, absl::StrCat(a, ".", proj), false).view({b, s, heads, hd}),
                           config_.qk_norm ? param(absl::StrCat(a, ".", norm, ".weight")) : torch::Tensor(),
                           kQkNormEps, cos, sin);
  };
  const torch::Tensor q = heads_of("to_q", "norm_q"), k = heads_of("to_k", "norm_k");
  const torch::Tensor v = linear(h, a + ".to_v", false).view({b, s, heads, hd}).transpose(1, 2).contiguous();
  const torch::Tensor out = attention(q, k, v, mask, attention_options_);
  return linear(out.transpose(1, 2).reshape({b, s, heads * hd}), a + ".to_out.0", false);
}

}  // namespace diffusiond
