#include "core/models/anima_conditioner/anima_conditioner_model.h"

#include <torch/utils.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/models/activation_estimate.h"
#include "core/models/anima_conditioner/anima_conditioner_params.h"
#include "core/models/common/layers.h"
#include "core/models/common/qwen_attention.h"
#include "core/models/common/tensor_text.h"
#include "core/text/token_batch.h"
#include "core/util/bounded_text.h"
#include "core/util/cancellation_scope.h"
#include "core/util/exception_status.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

// nn.RMSNorm(eps=1e-6) everywhere; nn.LayerNorm's default 1e-5 when the
// config asks for LayerNorm.
constexpr double kAnimaRmsEps = 1e-6;
constexpr double kAnimaLayerNormEps = 1e-5;
constexpr double kAnimaRopeTheta = 10000.0;

bool anima_is_mask(const torch::Tensor& m) {
  return m.scalar_type() == torch::kBool || is_integer(m) || m.is_floating_point();
}

// cos/sin [1, 1, L, head_dim] for positions 0..L-1, as AnimaRotaryEmbedding
// (transformers' Qwen rotary: float32 inv_freq, float32 products).
std::pair<torch::Tensor, torch::Tensor> anima_rope(int64_t head_dim, int64_t length, torch::Device device) {
  const torch::Tensor positions = torch::arange(length, torch::kInt64).unsqueeze(0);
  auto [cos, sin] = qwen_rope_tables(kAnimaRopeTheta, head_dim, positions, MropeLayout{});
  return {cos.unsqueeze(1).to(device), sin.unsqueeze(1).to(device)};
}

}  // namespace

absl::StatusOr<std::unique_ptr<AnimaConditionerModel>> AnimaConditionerModel::create(
    const AnimaConditionerConfig& config, std::unique_ptr<WeightStore> weights,
    std::shared_ptr<const Tokenizer> tokenizer) {
  if (absl::Status s = config.validate(); !s.ok()) return s;
  DIFFUSIOND_RETURN_IF_ERROR(
      check_weights_match_table(*weights, anima_conditioner_parameter_table(config), "AnimaTextConditioner"));
  return std::unique_ptr<AnimaConditionerModel>(
      new AnimaConditionerModel(config, std::move(weights), std::move(tokenizer)));
}

absl::Status AnimaConditionerModel::check_inputs(const torch::Tensor& source, const torch::Tensor& ids,
                                                 const torch::Tensor& target_mask,
                                                 const torch::Tensor& source_mask) const {
  const AnimaConditionerConfig& c = config_;
  if (!source.defined() || source.dim() != 3 || source.size(0) < 1 || source.size(1) < 1 ||
      source.size(2) != c.source_dim || !source.is_floating_point()) {
    return absl::InvalidArgumentError(absl::StrCat("AnimaTextConditioner source_hidden_states has shape ",
                                                   shape_of(source), ", expected a float [B, Lq, ", c.source_dim,
                                                   "] with B, Lq >= 1"));
  }
  const int64_t batch = source.size(0);
  if (!ids.defined() || !is_integer(ids) || ids.dim() != 2 || ids.size(0) != batch || ids.size(1) < 1) {
    return absl::InvalidArgumentError(absl::StrCat("AnimaTextConditioner target_input_ids has shape ", shape_of(ids),
                                                   ", expected integer [", batch, ", Lt] with Lt >= 1"));
  }
  const int64_t lowest = ids.min().item<int64_t>(), highest = ids.max().item<int64_t>();
  if (lowest < 0 || highest >= c.target_vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat("AnimaTextConditioner target_input_ids hold ids in [", lowest,
                                                   ", ", highest, "], but the vocabulary is [0, ",
                                                   c.target_vocab_size, ")"));
  }
  if (target_mask.defined() && (target_mask.sizes() != ids.sizes() || !anima_is_mask(target_mask))) {
    return absl::InvalidArgumentError(absl::StrCat("AnimaTextConditioner target_attention_mask has shape ",
                                                   shape_of(target_mask), ", expected ", shape_of(ids)));
  }
  if (source_mask.defined() &&
      (source_mask.sizes() != source.sizes().slice(0, 2) || !anima_is_mask(source_mask))) {
    return absl::InvalidArgumentError(absl::StrCat("AnimaTextConditioner source_attention_mask has shape ",
                                                   shape_of(source_mask), ", expected [", batch, ", ",
                                                   source.size(1), "]"));
  }
  return absl::OkStatus();
}

absl::StatusOr<torch::Tensor> AnimaConditionerModel::forward(const torch::Tensor& source, const torch::Tensor& ids,
                                                             const torch::Tensor& target_mask,
                                                             const torch::Tensor& source_mask,
                                                             AnimaConditionerIntermediates* debug) const {
  DIFFUSIOND_RETURN_IF_ERROR(check_inputs(source, ids, target_mask, source_mask));
  return status_of("the AnimaTextConditioner forward", [&]() -> absl::StatusOr<torch::Tensor> {
    torch::NoGradGuard no_grad;
    const torch::Device device = forward_device(), home = source.device();
    const auto moved = [&](const torch::Tensor& t) { return t.defined() ? t.to(device) : t; };
    torch::Tensor out = run(moved(source), moved(ids), moved(target_mask), moved(source_mask), debug);
    return device == home ? out : out.to(home);
  });
}

torch::Tensor AnimaConditionerModel::norm(const std::string& prefix, const torch::Tensor& x) const {
  if (config_.use_layer_norm) {
    return torch::layer_norm(x, {x.size(-1)}, param(prefix + ".weight"), param(prefix + ".bias"), kAnimaLayerNormEps);
  }
  return rms_norm(x, param(prefix + ".weight"), kAnimaRmsEps);
}

torch::Tensor AnimaConditionerModel::run(const torch::Tensor& source_in, const torch::Tensor& ids,
                                         const torch::Tensor& target_mask_in, const torch::Tensor& source_mask_in,
                                         AnimaConditionerIntermediates* debug) const {
  const AnimaConditionerConfig& c = config_;
  const torch::ScalarType dtype = compute_dtype(*this);
  const int64_t target_len = ids.size(1), source_len = source_in.size(1);
  const torch::Tensor source = source_in.to(dtype);
  const torch::Tensor target_mask = target_mask_in.defined() ? target_mask_in.ne(0) : torch::Tensor();
  const torch::Tensor source_mask = source_mask_in.defined() ? source_mask_in.ne(0) : torch::Tensor();

  torch::Tensor h = torch::embedding(param("embed.weight"), ids.to(torch::kInt64)).to(dtype);
  if (debug != nullptr) debug->embed = h[0];
  if (c.model_dim != c.target_dim) h = linear_layer(h, "in_proj.weight", "in_proj.bias");
  // Positions 0..L-1 of each sequence, padding included.
  const auto [t_cos, t_sin] = anima_rope(c.head_dim(), target_len, h.device());
  const auto [s_cos, s_sin] = anima_rope(c.head_dim(), source_len, h.device());
  if (debug != nullptr) {
    debug->rope_target_cos = t_cos[0][0];
    debug->rope_target_sin = t_sin[0][0];
    debug->rope_source_cos = s_cos[0][0];
    debug->rope_source_sin = s_sin[0][0];
    debug->blocks.clear();
  }
  for (int64_t l = 0; l < c.num_layers; ++l) {
    check_cancelled();
    const std::string b = absl::StrCat("blocks.", l);
    if (c.use_self_attention) {
      const torch::Tensor n = norm(b + ".norm_self_attn", h);
      const torch::Tensor a = attention_block(b + ".self_attn", n, n, target_mask, t_cos, t_sin, t_cos, t_sin);
      if (debug != nullptr && l == 0) debug->block0_self_attn = a[0];
      h = h + a;
    }
    const torch::Tensor a = attention_block(b + ".cross_attn", norm(b + ".norm_cross_attn", h), source, source_mask,
                                            t_cos, t_sin, s_cos, s_sin);
    if (debug != nullptr && l == 0) debug->block0_cross_attn = a[0];
    h = h + a;
    const torch::Tensor mlp = linear_layer(
        torch::gelu(linear_layer(norm(b + ".norm_mlp", h), b + ".mlp.0.weight", b + ".mlp.0.bias")),
        b + ".mlp.2.weight", b + ".mlp.2.bias");
    h = h + mlp;
    if (debug != nullptr) debug->blocks.push_back(h[0]);
  }
  const torch::Tensor projected = linear_layer(h, "out_proj.weight", "out_proj.bias");
  torch::Tensor out = rms_norm(projected, param("norm.weight"), kAnimaRmsEps);
  if (debug != nullptr) {
    debug->out_proj = projected[0];
    debug->norm = out[0];
  }
  if (target_mask.defined()) out = out * target_mask.to(out.scalar_type()).unsqueeze(-1);
  if (target_len < c.min_sequence_length) {
    out = torch::cat({out, torch::zeros({out.size(0), c.min_sequence_length - target_len, out.size(2)},
                                        out.options())},
                     1);
  }
  return out;
}

torch::Tensor AnimaConditionerModel::attention_block(const std::string& prefix, const torch::Tensor& h,
                                                     const torch::Tensor& context, const torch::Tensor& key_mask,
                                                     const torch::Tensor& q_cos, const torch::Tensor& q_sin,
                                                     const torch::Tensor& k_cos, const torch::Tensor& k_sin) const {
  const int64_t b = h.size(0), lq = h.size(1), lk = context.size(1);
  const int64_t heads = config_.num_attention_heads, hd = config_.head_dim();
  const auto split = [&](const torch::Tensor& in, const char* proj, int64_t len) {
    return linear_layer(in, absl::StrCat(prefix, ".", proj, ".weight"), "").view({b, len, heads, hd}).transpose(1, 2);
  };
  const auto normed = [&](const torch::Tensor& in, const char* proj, int64_t len, const char* norm_name,
                          const torch::Tensor& cos, const torch::Tensor& sin) {
    const torch::Tensor x =
        rms_norm(split(in, proj, len), param(absl::StrCat(prefix, ".", norm_name, ".weight")), kAnimaRmsEps);
    return apply_half_split_rope(x, cos, sin).contiguous();
  };
  const torch::Tensor q = normed(h, "q_proj", lq, "q_norm", q_cos, q_sin);
  const torch::Tensor k = normed(context, "k_proj", lk, "k_norm", k_cos, k_sin);
  const torch::Tensor v = split(context, "v_proj", lk).contiguous();
  // An item none of whose keys may be attended gives 0 (torch >= 2.5's
  // SDPA), not the NaN of a softmax over nothing: it attends to every key,
  // and its output is dropped.
  torch::Tensor mask = key_mask, empty;
  if (mask.defined()) {
    empty = mask.any(1).logical_not();
    if (empty.any().item<bool>()) mask = mask.logical_or(empty.unsqueeze(1));
  }
  torch::Tensor out = attention(q, k, v, mask, attention_options_);
  if (empty.defined()) out = out.masked_fill(empty.view({b, 1, 1, 1}), 0);
  return linear_layer(out.transpose(1, 2).reshape({b, lq, heads * hd}), prefix + ".o_proj.weight", "");
}

absl::StatusOr<NamedTensors> AnimaConditionerModel::step(const NamedTensors& inputs) const {
  static constexpr const char* kNames[] = {"source_hidden_states", "target_input_ids", "target_attention_mask",
                                           "source_attention_mask"};
  for (const auto& [name, unused] : inputs) {
    if (std::find_if(std::begin(kNames), std::end(kNames), [&](const char* n) { return name == n; }) ==
        std::end(kNames)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unexpected input \"", bounded(name, 64),
          "\" for AnimaTextConditioner; it takes \"source_hidden_states\" [B, Lq, source_dim], \"target_input_ids\" "
          "[B, Lt] and optionally \"source_attention_mask\" [B, Lq], \"target_attention_mask\" [B, Lt]"));
    }
  }
  const auto get = [&](const char* name) {
    const auto it = inputs.find(name);
    return it == inputs.end() ? torch::Tensor() : it->second;
  };
  if (!get("source_hidden_states").defined() || !get("target_input_ids").defined()) {
    return absl::InvalidArgumentError(
        "AnimaTextConditioner Step needs \"source_hidden_states\" [B, Lq, source_dim] and \"target_input_ids\" [B, Lt]");
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor out,
                              forward(get("source_hidden_states"), get("target_input_ids"),
                                      get("target_attention_mask"), get("source_attention_mask")));
  return NamedTensors{{"out", std::move(out)}};
}

absl::StatusOr<ConditionedText> AnimaConditionerModel::condition(const ConditionerRequest& request) const {
  if (tokenizer() == nullptr) {
    return absl::FailedPreconditionError(
        "this text conditioner was loaded without a tokenizer (none in its folder or the pipeline's t5_tokenizer "
        "folder)");
  }
  const torch::Tensor& states = request.source_hidden_states;
  if (!states.defined() || states.dim() != 2 || states.size(1) != config_.source_dim) {
    return absl::InvalidArgumentError(absl::StrCat("the text conditioner's source states have shape ",
                                                   shape_of(states), ", expected [L, ", config_.source_dim, "]"));
  }
  if (!request.source_mask.defined() || request.source_mask.dim() != 1 ||
      request.source_mask.size(0) != states.size(0)) {
    return absl::InvalidArgumentError(absl::StrCat("the text conditioner's source mask has shape ",
                                                   shape_of(request.source_mask), ", expected [", states.size(0),
                                                   "]"));
  }
  TokenizeOptions options;
  options.max_length = request.max_tokens > 0 ? request.max_tokens : kAnimaMaxSequenceLength;
  const std::vector<std::string> texts = {request.text};
  DIFFUSIOND_ASSIGN_OR_RETURN(const TokenBatch batch, tokenize_batch(*tokenizer(), texts, options));
  const std::vector<int64_t> ids(batch.ids.begin(), batch.ids.end());
  const torch::Tensor target = torch::tensor(ids, torch::kInt64).unsqueeze(0);
  // No source rows: one zero row, masked, as the pipeline feeds an empty
  // prompt's Qwen states.
  torch::Tensor source = states.unsqueeze(0), source_mask = request.source_mask.ne(0).unsqueeze(0);
  if (states.size(0) == 0) {
    source = torch::zeros({1, 1, config_.source_dim}, states.options());
    source_mask = torch::zeros({1, 1}, torch::kBool);
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(const torch::Tensor out, forward(source, target, torch::ones_like(target), source_mask));
  ConditionedText conditioned;
  conditioned.hidden_states = out[0];
  conditioned.tokens = batch.token_counts[0];
  return conditioned;
}

int64_t anima_conditioner_activation_bytes(const AnimaConditionerConfig& c, torch::ScalarType dtype,
                                           int64_t source_rows, int64_t target_tokens,
                                           int64_t materialized_weight_bytes) {
  // Live at a block's peak: the residual and its norm, q/k/v and their
  // float32 norm and RoPE temporaries, the attention output and o_proj, the
  // MLP's two widths; the source states and their k/v; float32 scores over
  // the longer sequence; the embedding table upcast whole where it is
  // stored otherwise (the largest materialised weight); the padded output.
  const int64_t e = torch::elementSize(dtype);
  const int64_t lt = std::max<int64_t>(target_tokens, 1), ls = std::max<int64_t>(source_rows, 1);
  const int64_t d = c.model_dim;
  const int64_t per_target = e * (8 * d + 2 * c.mlp_dim() + c.target_dim) + 4 * 6 * d;
  const int64_t per_source = e * (c.source_dim + 2 * d) + 4 * 2 * d;
  const int64_t scores = 2 * 4 * c.num_attention_heads * lt * std::max(lt, ls);
  const int64_t rope = 2 * 4 * (lt + ls) * c.head_dim();
  const int64_t output = e * std::max(lt, c.min_sequence_length) * c.target_dim;
  const int64_t largest_weight = std::max(e * d * c.mlp_dim(), materialized_weight_bytes);
  const int64_t tensors = lt * per_target + ls * per_source + scores + rope + output + largest_weight;
  return tensors + activation_allocator_slack_bytes(static_cast<double>(tensors));
}

int64_t AnimaConditionerModel::condition_activation_bytes(int64_t source_rows, int64_t target_tokens) const {
  return anima_conditioner_activation_bytes(config_, compute_dtype(*this), source_rows, target_tokens,
                                            largest_materialized_weight_bytes(weights(), compute_dtype(*this)));
}

ActivationEstimate AnimaConditionerModel::step_activations(const NamedTensors& inputs, bool) const {
  const auto source = inputs.find("source_hidden_states"), ids = inputs.find("target_input_ids");
  if (source == inputs.end() || ids == inputs.end() || source->second.dim() != 3 || ids->second.dim() != 2) return {};
  const int64_t batch = source->second.size(0);
  const int64_t one = anima_conditioner_activation_bytes(
      config_, compute_dtype(*this), source->second.size(1), ids->second.size(1),
      largest_materialized_weight_bytes(weights(), compute_dtype(*this)));
  return {batch * one, absl::StrCat(architecture(), ": ", batch, " calls of ", source->second.size(1),
                                    " source rows and ", ids->second.size(1), " target tokens")};
}

}  // namespace diffusiond
