#include "core/models/krea2/krea2_model.h"

#include <torch/types.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/models/common/attention.h"
#include "core/models/common/layers.h"
#include "core/models/common/tensor_text.h"
#include "core/models/krea2/krea2_params.h"
#include "core/models/krea2/krea2_rope.h"
#include "core/util/cancellation_scope.h"
#include "core/util/exception_status.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

constexpr double kKrea2TimeScale = 1000.0;    // the sinusoid takes sigma * 1000
constexpr double kKrea2TimePeriod = 10000.0;  // f_j = exp(-ln(1e4) j / (E/2))

// A [rows, d] RoPE table as [batch, rows, d] on `device`.
torch::Tensor krea2_rope_for_batch(const torch::Tensor& table, int64_t batch, const torch::Device& device) {
  return table.to(device).unsqueeze(0).expand({batch, table.size(0), table.size(1)}).contiguous();
}

torch::Tensor krea2_gelu_tanh(const torch::Tensor& x) { return torch::gelu(x, "tanh"); }

}  // namespace

absl::StatusOr<std::unique_ptr<Krea2Model>> Krea2Model::create(const Krea2Config& config,
                                                               std::unique_ptr<WeightStore> weights,
                                                               const ScheduleOptions& schedule) {
  if (absl::Status s = config.validate(); !s.ok()) return s;
  DIFFUSIOND_RETURN_IF_ERROR(check_weights_match_table(*weights, krea2_parameter_table(config), "Krea 2"));
  return std::unique_ptr<Krea2Model>(new Krea2Model(config, std::move(weights), schedule));
}

Krea2Model::Krea2Model(const Krea2Config& config, std::unique_ptr<WeightStore> weights, const ScheduleOptions& schedule)
    : ConfiguredDenoiser(config, std::move(weights), schedule) {}

absl::Status Krea2Model::check_inputs(const Krea2Inputs& in) const {
  const Krea2Config& c = config_;
  std::vector<std::string> problems;
  // The mask and the position ids may be bool / integer or float (upstream
  // converts the mask to bool and the ids to float); the rest must be float.
  const auto check = [&](const char* name, const torch::Tensor& t, std::vector<int64_t> expected,
                         const std::string& expected_text, bool any_real = false) {
    const bool typed = t.defined() && (t.is_floating_point() || (any_real && !t.is_complex()));
    bool ok = typed && t.dim() == static_cast<int64_t>(expected.size());
    for (size_t i = 0; ok && i < expected.size(); ++i) ok = expected[i] < 0 ? t.size(i) >= 1 : t.size(i) == expected[i];
    if (!ok) {
      problems.push_back(absl::StrCat("\"", name, "\" is ", t.defined() && !typed ? "a wrongly typed " : "",
                                      shape_of(t), ", expected ", any_real ? "a real or bool " : "a float ",
                                      expected_text));
    }
  };
  const torch::Tensor& x = in.hidden_states;
  check("hidden_states", x, {-1, -1, c.in_channels}, absl::StrCat("[B, S, ", c.in_channels, "]"));
  if (!problems.empty()) return absl::InvalidArgumentError(absl::StrCat("Krea 2 forward: ", problems[0]));
  const int64_t b = x.size(0), s = x.size(1);
  const torch::Tensor& e = in.encoder_hidden_states;
  check("encoder_hidden_states", e, {b, -1, c.num_text_layers, c.text_hidden_dim},
        absl::StrCat("[", b, ", L, ", c.num_text_layers, ", ", c.text_hidden_dim, "]"));
  const int64_t l = e.defined() && e.dim() == 4 ? e.size(1) : -1;
  if (in.encoder_attention_mask.defined()) {
    check("encoder_attention_mask", in.encoder_attention_mask, {b, l}, absl::StrCat("[", b, ", L]"), true);
  }
  check("timestep", in.timestep, {b}, absl::StrCat("[", b, "]"));
  if (l > 0) {
    check("position_ids", in.position_ids, {l + s, 3}, absl::StrCat("[L + S = ", l + s, ", 3]"), true);
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("Krea 2 forward: ", absl::StrJoin(problems, "; ")));
}

absl::StatusOr<torch::Tensor> Krea2Model::forward(const Krea2Inputs& inputs, NamedTensors* intermediates) const {
  if (absl::Status s = check_inputs(inputs); !s.ok()) return s;
  return status_of("the Krea 2 forward", [&]() -> absl::StatusOr<torch::Tensor> {
    torch::NoGradGuard no_grad;
    // On a placement's device the inputs go there and the output comes
    // back; run() makes every other tensor from them.
    const torch::Device device = forward_device(), home = inputs.hidden_states.device();
    Krea2Inputs moved = inputs;
    moved.encoder_attention_mask = without_host_mask_admitting_every_key(moved.encoder_attention_mask);
    if (device == home) return run(moved, intermediates);
    for (torch::Tensor* t : {&moved.hidden_states, &moved.encoder_hidden_states, &moved.encoder_attention_mask,
                             &moved.timestep, &moved.position_ids}) {
      if (t->defined()) *t = t->to(device);
    }
    return run(moved, intermediates).to(home);
  });
}

torch::Tensor Krea2Model::linear(const torch::Tensor& x, const std::string& module, bool bias) const {
  return linear_layer(x, module + ".weight", bias ? module + ".bias" : "");
}

torch::Tensor Krea2Model::norm(const torch::Tensor& x, const std::string& module) const {
  // Upstream: F.rms_norm(x.float(), weight=w + 1) in float32, back to x's
  // dtype. The weight is read at the compute dtype, then widened.
  const torch::Tensor weight = param(module + ".weight").to(torch::kFloat32) + 1.0f;
  return rms_norm(x.to(torch::kFloat32), weight, config_.norm_eps).to(x.scalar_type());
}

torch::Tensor Krea2Model::norm_rope(const torch::Tensor& x, const std::string& module,
                                    const AttentionSpec& spec) const {
  if (!spec.cos.defined()) return norm(x, module).transpose(1, 2).contiguous();
  // float32: the norm and the rotation in one pass; otherwise the norm
  // rounds to the compute dtype first, as upstream's module does.
  if (x.scalar_type() == torch::kFloat32) {
    const torch::Tensor weight = param(module + ".weight").to(torch::kFloat32) + 1.0f;
    return norm_rope_heads(x, weight, config_.norm_eps, spec.cos, spec.sin);
  }
  return norm_rope_heads(norm(x, module), torch::Tensor(), config_.norm_eps, spec.cos, spec.sin);
}

torch::Tensor Krea2Model::attention_layer(const torch::Tensor& h, const std::string& prefix, const AttentionSpec& spec,
                                          const torch::Tensor& key_mask) const {
  const std::string a = prefix + ".attn.";
  const int64_t b = h.size(0), n = h.size(1);
  const torch::Tensor q =
      norm_rope(linear(h, a + "to_q", false).view({b, n, spec.heads, spec.head_dim}), a + "norm_q", spec);
  torch::Tensor k =
      norm_rope(linear(h, a + "to_k", false).view({b, n, spec.kv_heads, spec.head_dim}), a + "norm_k", spec);
  torch::Tensor v = linear(h, a + "to_v", false).view({b, n, spec.kv_heads, spec.head_dim}).transpose(1, 2);
  // Grouped-query attention: query head i reads KV head i / group, as
  // upstream's repeat_interleave.
  const int64_t group = spec.heads / spec.kv_heads;
  if (group > 1) {
    k = k.repeat_interleave(group, 1);
    v = v.repeat_interleave(group, 1);
  }
  const torch::Tensor out =
      attention(q, k, v.contiguous(), key_mask, attention_options_).transpose(1, 2).reshape({b, n, -1});
  // The sigmoid output gate, before the output projection.
  return linear(out * torch::sigmoid(linear(h, a + "to_gate", false)), a + "to_out.0", false);
}

torch::Tensor Krea2Model::swiglu(const torch::Tensor& h, const std::string& prefix) const {
  const std::string f = prefix + ".ff.";
  // silu(gate) * up over gate's output; up's dies with this statement,
  // before the down projection runs.
  const torch::Tensor hidden = silu_mul_(linear(h, f + "gate", false), linear(h, f + "up", false));
  return linear(hidden, f + "down", false);
}

torch::Tensor Krea2Model::text_stage(const torch::Tensor& text, const torch::Tensor& text_mask,
                                     NamedTensors* intermediates) const {
  const Krea2Config& c = config_;
  const int64_t b = text.size(0), l = text.size(1), layers = text.size(2), dim = text.size(3);
  AttentionSpec spec;
  spec.heads = c.text_num_attention_heads, spec.kv_heads = c.text_num_key_value_heads;
  spec.head_dim = c.text_head_dim();
  const auto fusion_block = [&](const std::string& prefix, const torch::Tensor& x, const torch::Tensor& mask) {
    torch::Tensor y = x + attention_layer(norm(x, prefix + ".norm1"), prefix, spec, mask);
    return y + swiglu(norm(y, prefix + ".norm2"), prefix);
  };
  // Layerwise blocks: each token's stack of tapped layers is one sequence,
  // unmasked (a padded token's stack is garbage only to itself).
  torch::Tensor x = text.reshape({b * l, layers, dim});
  for (int64_t i = 0; i < c.num_layerwise_text_blocks; ++i) {
    check_cancelled();
    x = fusion_block(absl::StrCat("text_fusion.layerwise_blocks.", i), x, torch::Tensor());
  }
  // The projector collapses the layer axis: [B, L, Dt, NL] -> [B, L, Dt].
  x = linear(x.reshape({b, l, layers, dim}).permute({0, 1, 3, 2}), "text_fusion.projector", false).squeeze(-1);
  if (intermediates != nullptr) (*intermediates)["text_projector"] = x;
  for (int64_t i = 0; i < c.num_refiner_text_blocks; ++i) {
    check_cancelled();
    x = fusion_block(absl::StrCat("text_fusion.refiner_blocks.", i), x, text_mask);
  }
  if (intermediates != nullptr) (*intermediates)["text_fusion"] = x;
  const torch::Tensor projected = linear(norm(x, "txt_in.norm"), "txt_in.linear_1", true);
  return linear(krea2_gelu_tanh(projected), "txt_in.linear_2", true);
}

torch::Tensor Krea2Model::block(const std::string& prefix, const torch::Tensor& x_in, const torch::Tensor& temb_mod,
                                const AttentionSpec& spec, const torch::Tensor& key_mask) const {
  const int64_t d = config_.hidden_size();
  // (prescale, preshift, pregate, postscale, postshift, postgate): scale
  // before shift; a per-block table added to the shared modulation.
  const torch::Tensor table = param(prefix + ".scale_shift_table");
  const std::vector<torch::Tensor> m = (temb_mod.view({temb_mod.size(0), 1, 6, d}) + table).unbind(2);
  const torch::Tensor attn_in = (1.0 + m[0]) * norm(x_in, prefix + ".norm1") + m[1];
  const torch::Tensor x = x_in + m[2] * attention_layer(attn_in, prefix, spec, key_mask);
  const torch::Tensor ff_in = (1.0 + m[3]) * norm(x, prefix + ".norm2") + m[4];
  return x + m[5] * swiglu(ff_in, prefix);
}

torch::Tensor Krea2Model::run(const Krea2Inputs& in, NamedTensors* intermediates) const {
  const Krea2Config& c = config_;
  const torch::ScalarType dtype = compute_dtype(*this);
  const torch::Device device = in.hidden_states.device();
  const int64_t b = in.hidden_states.size(0), s = in.hidden_states.size(1);
  const int64_t l = in.encoder_hidden_states.size(1);
  const auto keep = [&](const std::string& name, const torch::Tensor& t) {
    if (intermediates != nullptr) (*intermediates)[name] = t;
  };

  // Sinusoid of float32 sigma * 1000 (scaled before the frequencies), cos
  // first; GELU(tanh) MLP. temb [B, 1, hidden] modulates the final layer
  // raw; every block shares time_mod_proj(GELU(temb)).
  const torch::Tensor t1000 = in.timestep.reshape({-1}).to(torch::kFloat32) * static_cast<float>(kKrea2TimeScale);
  const torch::Tensor sinusoid = timestep_features(t1000, c.timestep_embed_dim, kKrea2TimePeriod).to(dtype);
  const torch::Tensor temb =
      linear(krea2_gelu_tanh(linear(sinusoid, "time_embed.linear_1", true)), "time_embed.linear_2", true).unsqueeze(1);
  keep("temb", temb);
  const torch::Tensor temb_mod = linear(krea2_gelu_tanh(temb), "time_mod_proj", true);
  keep("temb_mod", temb_mod);

  // Key-padding masks: the text's for the refiner blocks, [text | ones for
  // the image] for the main blocks. Padded rows still flow through every
  // layer but are never read as keys.
  torch::Tensor text_mask, key_mask;
  if (in.encoder_attention_mask.defined()) {
    text_mask = in.encoder_attention_mask.to(torch::kBool);
    key_mask =
        torch::cat({text_mask, torch::ones({b, s}, torch::TensorOptions().dtype(torch::kBool).device(device))}, 1);
  }
  const torch::Tensor text = text_stage(in.encoder_hidden_states.to(dtype), text_mask, intermediates);
  keep("txt_in", text);
  const torch::Tensor image = linear(in.hidden_states.to(dtype), "img_in", true);
  keep("img_in", image);
  torch::Tensor x = torch::cat({text, image}, 1);  // text first

  const auto [cos, sin] = krea2_rope(in.position_ids, c.axes_dims_rope, c.rope_theta);
  keep("rope_cos", cos);
  keep("rope_sin", sin);
  AttentionSpec spec;
  spec.heads = c.num_attention_heads, spec.kv_heads = c.num_key_value_heads, spec.head_dim = c.attention_head_dim;
  spec.cos = krea2_rope_for_batch(cos, b, device);
  spec.sin = krea2_rope_for_batch(sin, b, device);
  // check_cancelled() between blocks: a cancelled step stops within one
  // block instead of running the whole forward.
  for (int64_t i = 0; i < c.num_layers; ++i) {
    check_cancelled();
    x = block(absl::StrCat("transformer_blocks.", i), x, temb_mod, spec, key_mask);
    keep(absl::StrCat("block", i), x);
  }

  // Final layer: the raw temb plus a [2, hidden] table gives (scale, shift).
  const torch::Tensor mod = temb + param("final_layer.scale_shift_table");
  const torch::Tensor normed = norm(x.narrow(1, l, s), "final_layer.norm");
  keep("final_norm", normed);
  return linear((1.0 + mod.narrow(1, 0, 1)) * normed + mod.narrow(1, 1, 1), "final_layer.linear", true);
}

}  // namespace diffusiond
