#include "core/models/flux/flux_model.h"

#include <torch/types.h>

#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/util/status_macros.h"
#include "core/models/common/layers.h"
#include "core/models/common/tensor_text.h"
#include "core/models/flux/flux_params.h"
#include "core/models/flux/flux_rope.h"
#include "core/util/exception_status.h"
#include "core/util/cancellation_scope.h"

namespace diffusiond {
namespace {

constexpr double kNormEps = 1e-6;      // every LayerNorm and the q/k RMSNorms
constexpr int64_t kTimeChannels = 256;  // the timestep / guidance sinusoid
constexpr float kTimeScale = 1000.0f;

// LN(x) * (1 + scale) + shift at FLUX's eps (scale and shift [B, 1, D]).
torch::Tensor modulate(const torch::Tensor& x, const torch::Tensor& scale, const torch::Tensor& shift) {
  return modulated_layer_norm(x, scale, shift, kNormEps);
}

// [B, n] -> n chunks [B, 1, D] of a modulation Linear's output.
std::vector<torch::Tensor> chunks(const torch::Tensor& mod, int64_t n) {
  return mod.unsqueeze(1).chunk(n, -1);
}

// Rows [first, first + n) of a [rows, d] table, repeated for the batch.
torch::Tensor rows_for_batch(const torch::Tensor& table, int64_t first, int64_t n, int64_t batch) {
  return table.narrow(0, first, n).unsqueeze(0).expand({batch, n, table.size(1)}).contiguous();
}

}  // namespace

absl::StatusOr<std::unique_ptr<FluxModel>> FluxModel::create(const FluxConfig& config,
                                                             std::unique_ptr<WeightStore> weights,
                                                             const ScheduleOptions& schedule) {
  if (absl::Status s = config.validate(); !s.ok()) return s;
  DIFFUSIOND_RETURN_IF_ERROR(check_weights_match_table(*weights, flux_parameter_table(config), "FLUX"));
  return std::unique_ptr<FluxModel>(new FluxModel(config, std::move(weights), schedule));
}

FluxModel::FluxModel(const FluxConfig& config, std::unique_ptr<WeightStore> weights, const ScheduleOptions& schedule)
    : ConfiguredDenoiser(config, std::move(weights), schedule) {}

absl::Status FluxModel::check_inputs(const FluxInputs& in) const {
  const FluxConfig& c = config_;
  std::vector<std::string> problems;
  // Ids may be integers; everything else must be float.
  const auto check = [&](const char* name, const torch::Tensor& t, std::vector<int64_t> expected,
                         const std::string& expected_text, bool ids = false) {
    const bool typed = t.defined() && (t.is_floating_point() || (ids && t.scalar_type() != torch::kBool &&
                                                                 !t.is_complex()));
    bool ok = typed && t.dim() == static_cast<int64_t>(expected.size());
    for (size_t i = 0; ok && i < expected.size(); ++i) {
      ok = expected[i] < 0 ? t.size(i) >= 1 : t.size(i) == expected[i];
    }
    if (!ok) {
      problems.push_back(absl::StrCat("\"", name, "\" is ", t.defined() && !typed ? "a wrongly typed " : "",
                                      shape_of(t), ", expected ", ids ? "a real " : "a float ", expected_text));
    }
  };
  const torch::Tensor& x = in.hidden_states;
  check("hidden_states", x, {-1, -1, c.in_channels}, absl::StrCat("[B, S, ", c.in_channels, "]"));
  if (!problems.empty()) return absl::InvalidArgumentError(absl::StrCat("FLUX forward: ", problems[0]));
  const int64_t b = x.size(0), s = x.size(1);
  const torch::Tensor& e = in.encoder_hidden_states;
  const int64_t l = e.defined() && e.dim() == 3 ? e.size(1) : -1;
  check("encoder_hidden_states", e, {b, -1, c.joint_attention_dim},
        absl::StrCat("[", b, ", L, ", c.joint_attention_dim, "]"));
  check("pooled_projections", in.pooled_projections, {b, c.pooled_projection_dim},
        absl::StrCat("[", b, ", ", c.pooled_projection_dim, "]"));
  check("timestep", in.timestep, {b}, absl::StrCat("[", b, "]"));
  check("img_ids", in.img_ids, {s, 3}, absl::StrCat("[", s, ", 3] (one row per image token)"), true);
  check("txt_ids", in.txt_ids, {l < 0 ? -1 : l, 3}, "[L, 3] (one row per text token)", true);
  if (c.guidance_embeds) {
    check("guidance", in.guidance, {b}, absl::StrCat("[", b, "] (the model is guidance-distilled)"));
  } else if (in.guidance.defined()) {
    problems.push_back("\"guidance\" was given, but the model has no guidance embedder");
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("FLUX forward: ", absl::StrJoin(problems, "; ")));
}

absl::StatusOr<torch::Tensor> FluxModel::forward(const FluxInputs& inputs) const {
  if (absl::Status s = check_inputs(inputs); !s.ok()) return s;
  return status_of("the FLUX forward", [&]() -> absl::StatusOr<torch::Tensor> {
    torch::NoGradGuard no_grad;
    // On a placement's device the inputs go there and the output comes
    // back; run() makes every other tensor from them.
    const torch::Device device = forward_device(), home = inputs.hidden_states.device();
    if (device == home) return run(inputs);
    FluxInputs moved = inputs;
    for (torch::Tensor* t : {&moved.hidden_states, &moved.encoder_hidden_states, &moved.pooled_projections,
                             &moved.timestep, &moved.img_ids, &moved.txt_ids, &moved.guidance}) {
      if (t->defined()) *t = t->to(device);
    }
    return run(moved).to(home);
  });
}

torch::Tensor FluxModel::linear(const torch::Tensor& x, const std::string& module) const {
  return linear_layer(x, module + ".weight", module + ".bias");
}

torch::Tensor FluxModel::embed_time(const FluxInputs& in, torch::ScalarType dtype) const {
  // Upstream scales t and guidance by 1000 at the model dtype (bfloat16
  // rounds 3500 to 3504); the sinusoid itself is float32.
  const auto embed = [&](const torch::Tensor& t, const std::string& embedder) {
    const torch::Tensor scaled = t.reshape({-1}).to(dtype) * kTimeScale;
    const torch::Tensor features = timestep_features(scaled, kTimeChannels).to(dtype);
    return linear(torch::silu(linear(features, embedder + ".linear_1")), embedder + ".linear_2");
  };
  torch::Tensor temb = embed(in.timestep, "time_text_embed.timestep_embedder");
  if (config_.guidance_embeds) temb = temb + embed(in.guidance, "time_text_embed.guidance_embedder");
  const std::string text = "time_text_embed.text_embedder";
  const torch::Tensor pooled = in.pooled_projections.to(dtype);
  return temb + linear(torch::silu(linear(pooled, text + ".linear_1")), text + ".linear_2");
}

torch::Tensor FluxModel::run(const FluxInputs& in) const {
  const torch::ScalarType dtype = compute_dtype(*this);
  const int64_t b = in.hidden_states.size(0), s = in.hidden_states.size(1);
  const int64_t l = in.encoder_hidden_states.size(1);

  // Every consumer of temb applies SiLU first: do it once.
  const torch::Tensor temb = torch::silu(embed_time(in, dtype));
  torch::Tensor x = linear(in.hidden_states.to(dtype), "x_embedder");
  torch::Tensor c = linear(in.encoder_hidden_states.to(dtype), "context_embedder");

  // Text first, matching the order tokens are joined in attention.
  const auto [cos, sin] = flux_rope_tables(torch::cat({in.txt_ids, in.img_ids}, 0), config_.axes_dims_rope);
  Rope rope;
  rope.txt_cos = rows_for_batch(cos, 0, l, b), rope.txt_sin = rows_for_batch(sin, 0, l, b);
  rope.img_cos = rows_for_batch(cos, l, s, b), rope.img_sin = rows_for_batch(sin, l, s, b);
  rope.cos = rows_for_batch(cos, 0, l + s, b), rope.sin = rows_for_batch(sin, 0, l + s, b);

  // check_cancelled() between blocks: a cancelled step stops within one
  // block instead of running the whole forward.
  for (int64_t i = 0; i < config_.num_layers; ++i) {
    check_cancelled();
    std::tie(x, c) = double_block(absl::StrCat("transformer_blocks.", i), x, c, temb, rope);
  }
  torch::Tensor joint = torch::cat({c, x}, 1);
  for (int64_t i = 0; i < config_.num_single_layers; ++i) {
    check_cancelled();
    joint = single_block(absl::StrCat("single_transformer_blocks.", i), joint, temb, rope);
  }
  x = joint.narrow(1, l, s);

  // diffusers' order: scale first (the original checkpoint stores shift first).
  const std::vector<torch::Tensor> mod = chunks(linear(temb, "norm_out.linear"), 2);
  return linear(modulate(x, mod[0], mod[1]), "proj_out");
}

torch::Tensor FluxModel::qk_heads(const torch::Tensor& h, const std::string& proj, const std::string& norm,
                                  const torch::Tensor& cos, const torch::Tensor& sin) const {
  const int64_t heads = config_.num_attention_heads, hd = config_.attention_head_dim;
  const torch::Tensor projected = linear(h, proj).view({h.size(0), h.size(1), heads, hd});
  return norm_rope_heads(projected, param(norm + ".weight"), kNormEps, cos, sin);
}

torch::Tensor FluxModel::v_heads(const torch::Tensor& h, const std::string& proj) const {
  const int64_t heads = config_.num_attention_heads, hd = config_.attention_head_dim;
  return linear(h, proj).view({h.size(0), h.size(1), heads, hd}).transpose(1, 2);
}

std::pair<torch::Tensor, torch::Tensor> FluxModel::double_block(const std::string& prefix, torch::Tensor x,
                                                                torch::Tensor c, const torch::Tensor& temb,
                                                                const Rope& rope) const {
  const std::string a = prefix + ".attn.";
  // (shift, scale, gate) for attention, then for the MLP, per stream.
  const std::vector<torch::Tensor> mx = chunks(linear(temb, prefix + ".norm1.linear"), 6);
  const std::vector<torch::Tensor> mc = chunks(linear(temb, prefix + ".norm1_context.linear"), 6);
  const torch::Tensor hx = modulate(x, mx[1], mx[0]), hc = modulate(c, mc[1], mc[0]);

  const torch::Tensor q = torch::cat({qk_heads(hc, a + "add_q_proj", a + "norm_added_q", rope.txt_cos, rope.txt_sin),
                                      qk_heads(hx, a + "to_q", a + "norm_q", rope.img_cos, rope.img_sin)}, 2);
  const torch::Tensor k = torch::cat({qk_heads(hc, a + "add_k_proj", a + "norm_added_k", rope.txt_cos, rope.txt_sin),
                                      qk_heads(hx, a + "to_k", a + "norm_k", rope.img_cos, rope.img_sin)}, 2);
  const torch::Tensor v = torch::cat({v_heads(hc, a + "add_v_proj"), v_heads(hx, a + "to_v")}, 2).contiguous();
  const int64_t l = c.size(1), s = x.size(1);
  const torch::Tensor out =
      attention(q, k, v, torch::Tensor(), attention_options_).transpose(1, 2).reshape({x.size(0), l + s, -1});

  const auto mlp = [&](const torch::Tensor& h, const std::string& ff) {
    return linear(torch::gelu(linear(h, ff + ".net.0.proj"), "tanh"), ff + ".net.2");
  };
  x = x + mx[2] * linear(out.narrow(1, l, s), a + "to_out.0");
  x = x + mx[5] * mlp(modulate(x, mx[4], mx[3]), prefix + ".ff");
  c = c + mc[2] * linear(out.narrow(1, 0, l), a + "to_add_out");
  c = c + mc[5] * mlp(modulate(c, mc[4], mc[3]), prefix + ".ff_context");
  return {x, c};
}

torch::Tensor FluxModel::single_block(const std::string& prefix, const torch::Tensor& s,
                                      const torch::Tensor& temb, const Rope& rope) const {
  const std::string a = prefix + ".attn.";
  const std::vector<torch::Tensor> mod = chunks(linear(temb, prefix + ".norm.linear"), 3);  // shift, scale, gate
  const torch::Tensor h = modulate(s, mod[1], mod[0]);
  const torch::Tensor mlp = torch::gelu(linear(h, prefix + ".proj_mlp"), "tanh");
  const torch::Tensor q = qk_heads(h, a + "to_q", a + "norm_q", rope.cos, rope.sin);
  const torch::Tensor k = qk_heads(h, a + "to_k", a + "norm_k", rope.cos, rope.sin);
  const torch::Tensor v = v_heads(h, a + "to_v").contiguous();
  const torch::Tensor attn =
      attention(q, k, v, torch::Tensor(), attention_options_).transpose(1, 2).reshape({s.size(0), s.size(1), -1});
  return s + mod[2] * linear(torch::cat({attn, mlp}, -1), prefix + ".proj_out");
}

}  // namespace diffusiond
