#include "core/models/qwen_image/qwen_image_model.h"

#include <torch/types.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/models/common/attention.h"
#include "core/models/common/layers.h"
#include "core/models/common/tensor_text.h"
#include "core/models/qwen_image/qwen_image_params.h"
#include "core/util/cancellation_scope.h"
#include "core/util/exception_status.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

constexpr double kQwenNormEps = 1e-6;       // every LayerNorm and RMSNorm of the model
constexpr double kQwenTimeScale = 1000.0;   // Timesteps(scale=1000): applied after sigma * f_j
constexpr double kQwenTimePeriod = 10000.0;

// A [rows, d] RoPE table as [batch, rows, d] on `device`.
torch::Tensor qwen_rope_for_batch(const torch::Tensor& table, int64_t batch, const torch::Device& device) {
  return table.to(device).unsqueeze(0).expand({batch, table.size(0), table.size(1)}).contiguous();
}

}  // namespace

absl::StatusOr<std::unique_ptr<QwenImageModel>> QwenImageModel::create(const QwenImageConfig& config,
                                                                       std::unique_ptr<WeightStore> weights,
                                                                       const ScheduleOptions& schedule) {
  if (absl::Status s = config.validate(); !s.ok()) return s;
  DIFFUSIOND_RETURN_IF_ERROR(check_weights_match_table(*weights, qwen_image_parameter_table(config), "Qwen-Image"));
  return std::unique_ptr<QwenImageModel>(new QwenImageModel(config, std::move(weights), schedule));
}

QwenImageModel::QwenImageModel(const QwenImageConfig& config, std::unique_ptr<WeightStore> weights,
                               const ScheduleOptions& schedule)
    : ConfiguredDenoiser(config, std::move(weights), schedule) {}

absl::Status QwenImageModel::check_inputs(const QwenImageInputs& in) const {
  const QwenImageConfig& c = config_;
  std::vector<std::string> problems;
  // The mask may be bool or any real type (upstream converts it to bool);
  // everything else must be float.
  const auto check = [&](const char* name, const torch::Tensor& t, std::vector<int64_t> expected,
                         const std::string& expected_text, bool mask = false) {
    const bool typed = t.defined() && (t.is_floating_point() || (mask && !t.is_complex()));
    bool ok = typed && t.dim() == static_cast<int64_t>(expected.size());
    for (size_t i = 0; ok && i < expected.size(); ++i) ok = expected[i] < 0 ? t.size(i) >= 1 : t.size(i) == expected[i];
    if (!ok) {
      problems.push_back(absl::StrCat("\"", name, "\" is ", t.defined() && !typed ? "a wrongly typed " : "",
                                      shape_of(t), ", expected ", mask ? "a real or bool " : "a float ",
                                      expected_text));
    }
  };
  const torch::Tensor& x = in.hidden_states;
  check("hidden_states", x, {-1, -1, c.in_channels}, absl::StrCat("[B, S, ", c.in_channels, "]"));
  if (!problems.empty()) return absl::InvalidArgumentError(absl::StrCat("Qwen-Image forward: ", problems[0]));
  const int64_t b = x.size(0), s = x.size(1);
  const torch::Tensor& e = in.encoder_hidden_states;
  check("encoder_hidden_states", e, {b, -1, c.joint_attention_dim},
        absl::StrCat("[", b, ", L, ", c.joint_attention_dim, "]"));
  const int64_t l = e.defined() && e.dim() == 3 ? e.size(1) : -1;
  if (in.encoder_hidden_states_mask.defined()) {
    check("encoder_hidden_states_mask", in.encoder_hidden_states_mask, {b, l}, absl::StrCat("[", b, ", L]"), true);
  }
  check("timestep", in.timestep, {b}, absl::StrCat("[", b, "]"));
  // Every factor and partial product is bounded by S before the next
  // multiplication or sum, so none can overflow.
  int64_t tokens = 0;
  bool fits = !in.img_shapes.empty();
  for (const auto& [frames, rows, cols] : in.img_shapes) {
    fits = fits && frames >= 1 && rows >= 1 && cols >= 1 && frames <= s && rows <= s && cols <= s &&
           frames * rows <= s && frames * rows * cols <= s - tokens;
    if (fits) tokens += frames * rows * cols;
  }
  if (!fits || tokens != s) {
    std::vector<std::string> entries;
    for (const auto& [frames, rows, cols] : in.img_shapes) {
      entries.push_back(absl::StrCat("(", frames, ", ", rows, ", ", cols, ")"));
    }
    problems.push_back(absl::StrCat("img_shapes [", absl::StrJoin(entries, ", "),
                                    "] must be positive entries whose frames x rows x cols sum to S = ", s));
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("Qwen-Image forward: ", absl::StrJoin(problems, "; ")));
}

absl::StatusOr<torch::Tensor> QwenImageModel::forward(const QwenImageInputs& inputs,
                                                      NamedTensors* intermediates) const {
  if (absl::Status s = check_inputs(inputs); !s.ok()) return s;
  DIFFUSIOND_ASSIGN_OR_RETURN(const QwenImageRope tables, qwen_image_rope(config_.axes_dims_rope, inputs.img_shapes,
                                                                          inputs.encoder_hidden_states.size(1)));
  return status_of("the Qwen-Image forward", [&]() -> absl::StatusOr<torch::Tensor> {
    torch::NoGradGuard no_grad;
    // On a placement's device the inputs go there and the output comes
    // back; run() makes every other tensor from them.
    const torch::Device device = forward_device(), home = inputs.hidden_states.device();
    QwenImageInputs moved = inputs;
    moved.encoder_hidden_states_mask = without_host_mask_admitting_every_key(moved.encoder_hidden_states_mask);
    if (device == home) return run(moved, tables, intermediates);
    for (torch::Tensor* t :
         {&moved.hidden_states, &moved.encoder_hidden_states, &moved.encoder_hidden_states_mask, &moved.timestep}) {
      if (t->defined()) *t = t->to(device);
    }
    return run(moved, tables, intermediates).to(home);
  });
}

torch::Tensor QwenImageModel::linear(const torch::Tensor& x, const std::string& module) const {
  return linear_layer(x, module + ".weight", module + ".bias");
}

torch::Tensor QwenImageModel::run(const QwenImageInputs& in, const QwenImageRope& tables,
                                  NamedTensors* intermediates) const {
  const torch::ScalarType dtype = compute_dtype(*this);
  const torch::Device device = in.hidden_states.device();
  const int64_t b = in.hidden_states.size(0), s = in.hidden_states.size(1);
  const auto keep = [&](const std::string& name, const torch::Tensor& t) {
    if (intermediates != nullptr) (*intermediates)[name] = t;
  };

  torch::Tensor x = linear(in.hidden_states.to(dtype), "img_in");
  keep("img_in", x);
  // RMSNorm (affine) before the text projection.
  const torch::Tensor text = rms_norm(in.encoder_hidden_states.to(dtype), param("txt_norm.weight"), kQwenNormEps);
  keep("txt_norm", text);
  torch::Tensor c = linear(text, "txt_in");
  keep("txt_in", c);

  // Upstream casts sigma to the model dtype, then takes float32 features
  // of 1000 * (sigma * f_j). (At reduced precision it also rounds f_j to
  // that dtype; float32, the parity reference, is unaffected.)
  const std::string embedder = "time_text_embed.timestep_embedder";
  const auto embed = [&](const torch::Tensor& t, bool record) {
    const torch::Tensor sinusoid =
        timestep_features(t.reshape({-1}).to(dtype), kQwenTimeChannels, kQwenTimePeriod, kQwenTimeScale).to(dtype);
    if (record) keep("t_sinusoid", sinusoid);
    return linear(torch::silu(linear(sinusoid, embedder + ".linear_1")), embedder + ".linear_2");
  };
  const torch::Tensor temb = embed(in.timestep, true);
  keep("temb", temb);
  // Every consumer of temb applies SiLU first: do it once.
  const torch::Tensor act = torch::silu(temb);
  // zero_cond_t: upstream's modulate_index is 0 for the first image's
  // tokens and 1 (the t = 0 embedding) for the reference images' after it.
  const QwenImageShape& target = in.img_shapes.front();
  const int64_t first_image_tokens = target[0] * target[1] * target[2];
  torch::Tensor act_zero;
  if (config_.zero_cond_t && first_image_tokens < s) act_zero = torch::silu(embed(in.timestep * 0, false));

  // Padding text is removed as attention keys only: cat([text, image]).
  torch::Tensor key_mask;
  if (in.encoder_hidden_states_mask.defined()) {
    key_mask = torch::cat({in.encoder_hidden_states_mask.to(torch::kBool),
                           torch::ones({b, s}, torch::TensorOptions().dtype(torch::kBool).device(device))},
                          1);
  }
  Rope rope;
  rope.img_cos = qwen_rope_for_batch(tables.img_cos, b, device);
  rope.img_sin = qwen_rope_for_batch(tables.img_sin, b, device);
  rope.txt_cos = qwen_rope_for_batch(tables.txt_cos, b, device);
  rope.txt_sin = qwen_rope_for_batch(tables.txt_sin, b, device);

  // check_cancelled() between blocks: a cancelled step stops within one
  // block instead of running the whole forward.
  for (int64_t i = 0; i < config_.num_layers; ++i) {
    check_cancelled();
    std::tie(x, c) =
        block(absl::StrCat("transformer_blocks.", i), x, c, act, act_zero, first_image_tokens, key_mask, rope);
    keep(absl::StrCat("block", i, "_img"), x);
    keep(absl::StrCat("block", i, "_txt"), c);
  }

  // AdaLayerNormContinuous: scale first, then shift.
  const std::vector<torch::Tensor> mod = linear(act, "norm_out.linear").unsqueeze(1).chunk(2, -1);
  const torch::Tensor normed = modulated_layer_norm(x, mod[0], mod[1], kQwenNormEps);
  keep("norm_out", normed);
  return linear(normed, "proj_out");
}

torch::Tensor QwenImageModel::qk_heads(const torch::Tensor& h, const std::string& proj, const std::string& norm,
                                       const torch::Tensor& cos, const torch::Tensor& sin) const {
  const int64_t heads = config_.num_attention_heads, hd = config_.attention_head_dim;
  const torch::Tensor projected = linear(h, proj).view({h.size(0), h.size(1), heads, hd});
  return norm_rope_heads(projected, param(norm + ".weight"), kQwenNormEps, cos, sin);
}

torch::Tensor QwenImageModel::v_heads(const torch::Tensor& h, const std::string& proj) const {
  const int64_t heads = config_.num_attention_heads, hd = config_.attention_head_dim;
  return linear(h, proj).view({h.size(0), h.size(1), heads, hd}).transpose(1, 2);
}

std::pair<torch::Tensor, torch::Tensor> QwenImageModel::block(const std::string& prefix, const torch::Tensor& x_in,
                                                              const torch::Tensor& c_in, const torch::Tensor& act,
                                                              const torch::Tensor& act_zero, int64_t first_image_tokens,
                                                              const torch::Tensor& key_mask, const Rope& rope) const {
  const std::string a = prefix + ".attn.";
  // (shift, scale, gate) for attention, then for the MLP, per stream.
  std::vector<torch::Tensor> mx = linear(act, prefix + ".img_mod.1").unsqueeze(1).chunk(6, -1);
  if (act_zero.defined()) {
    // Per image token: t's modulation for the generated image, t = 0's for
    // the reference images after it.
    const std::vector<torch::Tensor> mz = linear(act_zero, prefix + ".img_mod.1").unsqueeze(1).chunk(6, -1);
    const int64_t b = x_in.size(0), s = x_in.size(1), d = x_in.size(2);
    for (size_t i = 0; i < mx.size(); ++i) {
      mx[i] = torch::cat({mx[i].expand({b, first_image_tokens, d}), mz[i].expand({b, s - first_image_tokens, d})}, 1);
    }
  }
  const std::vector<torch::Tensor> mc = linear(act, prefix + ".txt_mod.1").unsqueeze(1).chunk(6, -1);
  const torch::Tensor hx = modulated_layer_norm(x_in, mx[1], mx[0], kQwenNormEps);
  const torch::Tensor hc = modulated_layer_norm(c_in, mc[1], mc[0], kQwenNormEps);

  // Text first, as upstream joins the streams.
  const torch::Tensor q = torch::cat({qk_heads(hc, a + "add_q_proj", a + "norm_added_q", rope.txt_cos, rope.txt_sin),
                                      qk_heads(hx, a + "to_q", a + "norm_q", rope.img_cos, rope.img_sin)},
                                     2);
  const torch::Tensor k = torch::cat({qk_heads(hc, a + "add_k_proj", a + "norm_added_k", rope.txt_cos, rope.txt_sin),
                                      qk_heads(hx, a + "to_k", a + "norm_k", rope.img_cos, rope.img_sin)},
                                     2);
  const torch::Tensor v = torch::cat({v_heads(hc, a + "add_v_proj"), v_heads(hx, a + "to_v")}, 2).contiguous();
  const int64_t l = c_in.size(1), s = x_in.size(1);
  const torch::Tensor out =
      attention(q, k, v, key_mask, attention_options_).transpose(1, 2).reshape({x_in.size(0), l + s, -1});

  const auto mlp = [&](const torch::Tensor& h, const std::string& ff) {
    return linear(torch::gelu(linear(h, ff + ".net.0.proj"), "tanh"), ff + ".net.2");
  };
  torch::Tensor x = x_in + mx[2] * linear(out.narrow(1, l, s), a + "to_out.0");
  torch::Tensor c = c_in + mc[2] * linear(out.narrow(1, 0, l), a + "to_add_out");
  x = x + mx[5] * mlp(modulated_layer_norm(x, mx[4], mx[3], kQwenNormEps), prefix + ".img_mlp");
  c = c + mc[5] * mlp(modulated_layer_norm(c, mc[4], mc[3], kQwenNormEps), prefix + ".txt_mlp");
  // Upstream clips both streams to float16's range.
  if (x.scalar_type() == torch::kHalf) {
    x = x.clamp(-65504, 65504);
    c = c.clamp(-65504, 65504);
  }
  return {x, c};
}

}  // namespace diffusiond
