#include "core/models/common/qwen_text_tower.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/models/activation_estimate.h"
#include "core/models/common/layers.h"
#include "core/models/common/tensor_text.h"
#include "core/util/bounded_text.h"
#include "core/util/cancellation_scope.h"
#include "core/util/exception_status.h"
#include "core/util/status_macros.h"

namespace diffusiond {

std::vector<ParamSpec> qwen_tower_parameter_table(const QwenTowerSpec& c) {
  const int64_t d = c.hidden_size, hd = c.head_dim, ff = c.intermediate_size;
  const int64_t q_rows = c.num_attention_heads * hd, kv_rows = c.num_key_value_heads * hd;
  const ParamKind W = ParamKind::kLayerWeight, N = ParamKind::kNormWeight, B = ParamKind::kBias;
  std::vector<ParamSpec> t = {{"embed_tokens.weight", {c.vocab_size, d}, W}};
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = absl::StrCat("layers.", i, ".");
    const std::string a = p + "self_attn.";
    t.push_back({a + "q_proj.weight", {q_rows, d}, W});
    if (c.qkv_bias) t.push_back({a + "q_proj.bias", {q_rows}, B});
    t.push_back({a + "k_proj.weight", {kv_rows, d}, W});
    if (c.qkv_bias) t.push_back({a + "k_proj.bias", {kv_rows}, B});
    t.push_back({a + "v_proj.weight", {kv_rows, d}, W});
    if (c.qkv_bias) t.push_back({a + "v_proj.bias", {kv_rows}, B});
    t.push_back({a + "o_proj.weight", {d, q_rows}, W});
    if (c.o_bias) t.push_back({a + "o_proj.bias", {d}, B});
    if (c.qk_norm) {
      t.push_back({a + "q_norm.weight", {hd}, N});
      t.push_back({a + "k_norm.weight", {hd}, N});
    }
    t.push_back({p + "mlp.gate_proj.weight", {ff, d}, W});
    t.push_back({p + "mlp.up_proj.weight", {ff, d}, W});
    t.push_back({p + "mlp.down_proj.weight", {d, ff}, W});
    t.push_back({p + "input_layernorm.weight", {d}, N});
    t.push_back({p + "post_attention_layernorm.weight", {d}, N});
  }
  t.push_back({"norm.weight", {d}, N});
  return t;
}

PrecisionDeclaration qwen_tower_precision_declaration() {
  PrecisionDeclaration d;
  // Norms are covered by the default "norm" pattern (and are norm weights).
  // The token table is an Embedding (rank 2), so it needs naming here.
  d.skip_patterns = {"^embed_tokens$"};
  return d;
}

int64_t qwen_tower_activation_bytes(const QwenTowerSpec& c, torch::ScalarType dtype, int64_t tokens,
                                    int64_t kept_states, int64_t materialized_weight_bytes) {
  const int64_t element = torch::elementSize(dtype);
  // Live at a layer's peak: the residual stream and its norm, q/k/v and
  // the attention output, the MLP's gate and up halves, one upcast weight,
  // and the float32 scores and probabilities of every head; beside them
  // the hidden states kept for the answer (a stack's taps, and the one
  // returned) and the RoPE tables (float32 cos and sin, and their copies at
  // the compute dtype). The upcast is an MLP weight decoded from FP8, or
  // whatever weight is stored otherwise than `dtype`: with narrow weights
  // (bf16 kept under float32) that is the embedding table, which
  // torch::embedding upcasts whole at each encode (Qwen3-4B's: 389 M
  // values, 1.56 GB at float32).
  const int64_t qkv = (c.num_attention_heads + 2 * c.num_key_value_heads) * c.head_dim;
  const int64_t per_token =
      element * (3 * c.hidden_size + qkv + c.num_attention_heads * c.head_dim + 2 * c.intermediate_size +
                 std::max<int64_t>(kept_states - 1, 0) * c.hidden_size) +
      (2 * 4 + 2 * element) * c.head_dim;
  const int64_t largest_weight = std::max(element * c.hidden_size * c.intermediate_size, materialized_weight_bytes);
  const int64_t scores = 2 * 4 * c.num_attention_heads * tokens * tokens;
  const int64_t tensors = tokens * per_token + largest_weight + scores;
  return tensors + activation_allocator_slack_bytes(static_cast<double>(tensors));
}

absl::Status QwenTextTower::check_weights(const QwenTowerSpec& spec, const WeightStore& weights) {
  return check_weights_match_table(weights, qwen_tower_parameter_table(spec), spec.name);
}

QwenTextTower::QwenTextTower(QwenTowerSpec spec, std::unique_ptr<WeightStore> weights,
                             std::shared_ptr<const Tokenizer> tokenizer)
    : TextEncoder(std::move(weights), std::move(tokenizer)), spec_(std::move(spec)) {}

absl::StatusOr<std::vector<torch::Tensor>> QwenTextTower::hidden_state_list(const torch::Tensor& input_ids,
                                                                            const torch::Tensor& attention_mask,
                                                                            const torch::Tensor& positions,
                                                                            absl::Span<const int64_t> states) const {
  const QwenTowerSpec& c = spec_;
  const int64_t count = c.num_hidden_layers + 1;
  if (states.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(c.name, ": no hidden state asked for"));
  }
  std::vector<int64_t> indices;
  for (int64_t layer : states) {
    DIFFUSIOND_RETURN_IF_ERROR(check_token_inputs(c.name, input_ids, attention_mask, c.vocab_size, count, layer));
    indices.push_back(layer < 0 ? layer + count : layer);
  }
  const int64_t batch = input_ids.size(0), seq = input_ids.size(1);
  if (positions.defined() &&
      (!is_integer(positions) || !(positions.dim() == 2 || (positions.dim() == 3 && positions.size(0) == 3)) ||
       positions.size(-2) != batch || positions.size(-1) != seq)) {
    return absl::InvalidArgumentError(absl::StrCat(c.name, " position_ids must be integer [3, ", batch, ", ", seq,
                                                   "] or [", batch, ", ", seq, "] like input_ids, got ",
                                                   shape_of(positions)));
  }
  return status_of(absl::StrCat("the ", c.name, " forward"), [&]() -> absl::StatusOr<std::vector<torch::Tensor>> {
    torch::NoGradGuard no_grad;
    // On a placement's device the inputs go there and the outputs come back.
    const torch::Device device = forward_device(), home = input_ids.device();
    const int64_t deepest = *std::max_element(indices.begin(), indices.end());
    const int64_t layers_to_run = std::min(deepest, c.num_hidden_layers);
    // Only the asked-for states outlive the layer after them.
    std::vector<bool> wanted(static_cast<size_t>(count), false);
    for (int64_t index : indices) wanted[static_cast<size_t>(index)] = true;
    std::vector<torch::Tensor> kept(static_cast<size_t>(count));
    torch::Tensor h = torch::embedding(param("embed_tokens.weight"), input_ids.to(device).to(torch::kInt64));
    if (wanted[0]) kept[0] = h;
    if (layers_to_run > 0) {
      const torch::Tensor key_mask = attention_mask.defined() ? attention_mask.to(device).ne(0) : torch::Tensor();
      const torch::Tensor allowed = qwen_attention_mask(key_mask, batch, seq, device);
      const torch::Tensor cpu_positions = positions.defined() ? positions.to(torch::kCPU).to(torch::kInt64)
                                                              : torch::arange(seq, torch::kInt64).unsqueeze(0);
      // The tables are computed on the CPU, where the reference computed
      // them, and moved: the same float32 values on every device.
      const auto [cpu_cos, cpu_sin] = qwen_rope_tables(c.rope_theta, c.head_dim, cpu_positions, c.mrope);
      const torch::Tensor cos = cpu_cos.unsqueeze(1).to(device), sin = cpu_sin.unsqueeze(1).to(device);
      for (int64_t i = 0; i < layers_to_run; ++i) {
        check_cancelled();  // a cancelled encoding stops within one layer
        h = decoder_layer(i, h, allowed, cos, sin);
        if (wanted[static_cast<size_t>(i + 1)]) kept[static_cast<size_t>(i + 1)] = h;
      }
    }
    if (deepest == c.num_hidden_layers) kept.back() = rms_norm(h, param("norm.weight"), c.rms_norm_eps);
    std::vector<torch::Tensor> out;
    for (int64_t index : indices) out.push_back(kept[static_cast<size_t>(index)].to(home));
    return out;
  });
}

absl::StatusOr<EncodedText> QwenTextTower::encode(const TextEncoding& request) const {
  DIFFUSIOND_ASSIGN_OR_RETURN(Tokens tokens, tokenize(request));
  const torch::Tensor mask = request.attend_to_padding ? torch::Tensor() : tokens.attention_mask;
  const torch::Tensor positions =
      spec_.positions_count_tokens ? tokens.attention_mask.cumsum(-1).sub_(1).clamp_min_(0) : torch::Tensor();
  const bool stack = !request.hidden_layers.empty();
  const std::vector<int64_t> states = stack ? request.hidden_layers : std::vector<int64_t>{request.hidden_layer};
  DIFFUSIOND_ASSIGN_OR_RETURN(std::vector<torch::Tensor> hidden,
                              hidden_state_list(tokens.input_ids, mask, positions, states));
  EncodedText encoded;
  encoded.hidden_states = stack ? torch::stack(hidden, 2)[0] : hidden[0][0];
  encoded.attention_mask = tokens.attention_mask[0].ne(0);
  encoded.tokens = tokens.count;
  return encoded;
}

int64_t QwenTextTower::encode_activation_bytes(int64_t tokens) const {
  const torch::ScalarType dtype = compute_dtype(*this);
  return qwen_tower_activation_bytes(spec_, dtype, tokens, 1, largest_materialized_weight_bytes(weights(), dtype));
}

int64_t QwenTextTower::request_activation_bytes(const TextEncoding& request) const {
  const torch::ScalarType dtype = compute_dtype(*this);
  // The stack is copied once more when it is assembled.
  const int64_t kept = request.hidden_layers.empty() ? 1 : 2 * static_cast<int64_t>(request.hidden_layers.size());
  return qwen_tower_activation_bytes(spec_, dtype, max_tokens_of(request), kept,
                                     largest_materialized_weight_bytes(weights(), dtype));
}

absl::StatusOr<NamedTensors> QwenTextTower::hidden_states_step(const NamedTensors& inputs) const {
  const std::string usage =
      absl::StrCat(spec_.name, " Step takes \"input_ids\" int64 [B, L], optionally \"attention_mask\" [B, L], ",
                   "\"position_ids\" [3, B, L] or [B, L], and \"hidden_layer\" (one integer) or \"hidden_layers\" ",
                   "(a list of integers)");
  for (const auto& [name, unused] : inputs) {
    if (name != "input_ids" && name != "attention_mask" && name != "position_ids" && name != "hidden_layer" &&
        name != "hidden_layers") {
      return absl::InvalidArgumentError(absl::StrCat("unexpected input \"", bounded(name, 64), "\"; ", usage));
    }
  }
  const auto find = [&](const char* name) {
    const auto it = inputs.find(name);
    return it != inputs.end() ? it->second : torch::Tensor();
  };
  const torch::Tensor ids = find("input_ids"), mask = find("attention_mask"), layer = find("hidden_layer"),
                      layers = find("hidden_layers");
  torch::Tensor positions = find("position_ids");
  if (!ids.defined()) return absl::InvalidArgumentError(absl::StrCat("missing \"input_ids\"; ", usage));
  if (layer.defined() && layers.defined()) {
    return absl::InvalidArgumentError(absl::StrCat("give \"hidden_layer\" or \"hidden_layers\", not both; ", usage));
  }
  const torch::Tensor& asked = layers.defined() ? layers : layer;
  if (asked.defined() &&
      (!is_integer(asked) || (layer.defined() ? asked.numel() != 1 : asked.dim() != 1) || asked.numel() < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(layer.defined() ? "input \"hidden_layer\" must be one integer"
                                                                   : "input \"hidden_layers\" must be a "
                                                                     "non-empty 1-D integer list",
                                                   ", got ", shape_of(asked)));
  }
  std::vector<int64_t> states = {-1};
  if (asked.defined()) {
    const torch::Tensor flat = asked.reshape({-1}).to(torch::kCPU).to(torch::kInt64).contiguous();
    states.assign(flat.data_ptr<int64_t>(), flat.data_ptr<int64_t>() + flat.numel());
  }
  if (!positions.defined() && mask.defined() && mask.sizes() == ids.sizes()) {
    // transformers' get_rope_index for text alone: real tokens count from
    // 0, padding sits at 1.
    const torch::Tensor real = mask.ne(0);
    positions = real.to(torch::kInt64).cumsum(-1).sub_(1).masked_fill_(real.logical_not(), 1);
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(std::vector<torch::Tensor> hidden, hidden_state_list(ids, mask, positions, states));
  return status_of(absl::StrCat("the ", spec_.name, " Step outputs"), [&]() -> absl::StatusOr<NamedTensors> {
    NamedTensors out;
    out["hidden_states"] = layers.defined() ? torch::stack(hidden, 2) : std::move(hidden[0]);
    return out;
  });
}

torch::Tensor QwenTextTower::projection(const torch::Tensor& x, const std::string& name, bool bias) const {
  return linear_layer(x, name + ".weight", bias ? name + ".bias" : "");
}

torch::Tensor QwenTextTower::decoder_layer(int64_t index, const torch::Tensor& h_in, const torch::Tensor& allowed,
                                           const torch::Tensor& cos, const torch::Tensor& sin) const {
  const QwenTowerSpec& c = spec_;
  const int64_t batch = h_in.size(0), seq = h_in.size(1), hd = c.head_dim;
  const double eps = c.rms_norm_eps;
  const std::string p = absl::StrCat("layers.", index, ".");
  const std::string a = p + "self_attn.";

  const torch::Tensor x = rms_norm(h_in, param(p + "input_layernorm.weight"), eps);
  // q and k: projection, RMSNorm over each head where the tower has it,
  // then RoPE.
  const auto heads_of = [&](const char* proj, const char* norm, int64_t heads) {
    torch::Tensor projected = projection(x, a + proj, c.qkv_bias).view({batch, seq, heads, hd});
    if (c.qk_norm) projected = rms_norm(projected, param(absl::StrCat(a, norm, ".weight")), eps);
    return apply_half_split_rope(projected.transpose(1, 2), cos, sin);
  };
  const torch::Tensor q = heads_of("q_proj", "q_norm", c.num_attention_heads);
  const torch::Tensor k = heads_of("k_proj", "k_norm", c.num_key_value_heads);
  const torch::Tensor v =
      projection(x, a + "v_proj", c.qkv_bias).view({batch, seq, c.num_key_value_heads, hd}).transpose(1, 2);
  const torch::Tensor attn = grouped_query_attention(q, k, v, allowed);
  torch::Tensor h =
      h_in + projection(attn.transpose(1, 2).reshape({batch, seq, c.num_attention_heads * hd}), a + "o_proj", c.o_bias);

  // SwiGLU: silu(gate) * up in place, the largest activation allocated once.
  const torch::Tensor y = rms_norm(h, param(p + "post_attention_layernorm.weight"), eps);
  // up_proj's output dies with this statement, before down_proj runs.
  const torch::Tensor hidden =
      silu_mul_(linear_layer(y, p + "mlp.gate_proj.weight", ""), linear_layer(y, p + "mlp.up_proj.weight", ""));
  return h.add_(linear_layer(hidden, p + "mlp.down_proj.weight", ""));
}

}  // namespace diffusiond
