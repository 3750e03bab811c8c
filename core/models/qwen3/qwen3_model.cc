#include "core/models/qwen3/qwen3_model.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "core/models/common/layers.h"
#include "core/models/qwen3/qwen3_attention.h"
#include "core/models/qwen3/qwen3_params.h"
#include "core/util/exception_status.h"
#include "core/util/status_macros.h"
#include "core/util/cancellation_scope.h"

namespace diffusiond {

absl::StatusOr<std::unique_ptr<Qwen3Model>> Qwen3Model::create(const Qwen3Config& config,
                                                               std::unique_ptr<WeightStore> weights,
                                                               std::shared_ptr<const Tokenizer> tokenizer) {
  if (absl::Status s = config.validate(); !s.ok()) return s;
  DIFFUSIOND_RETURN_IF_ERROR(check_weights_match_table(*weights, qwen3_parameter_table(config), "Qwen3"));
  return std::unique_ptr<Qwen3Model>(new Qwen3Model(config, std::move(weights), std::move(tokenizer)));
}

Qwen3Model::Qwen3Model(const Qwen3Config& config, std::unique_ptr<WeightStore> weights,
                       std::shared_ptr<const Tokenizer> tokenizer)
    : TextEncoder(std::move(weights), std::move(tokenizer)), config_(config) {}

absl::StatusOr<torch::Tensor> Qwen3Model::hidden_states(const torch::Tensor& input_ids,
                                                        const torch::Tensor& attention_mask,
                                                        int64_t layer) const {
  const int64_t states = config_.num_hidden_layers + 1;
  DIFFUSIOND_RETURN_IF_ERROR(
      check_token_inputs("Qwen3", input_ids, attention_mask, config_.vocab_size, states, layer));
  const int64_t index = layer < 0 ? layer + states : layer;
  return status_of("the Qwen3 forward", [&]() -> absl::StatusOr<torch::Tensor> {
    torch::NoGradGuard no_grad;
    const bool final_norm = index == config_.num_hidden_layers;
    const int64_t layers = final_norm ? config_.num_hidden_layers : index;
    // On a placement's device the inputs go there and the output comes back.
    const torch::Device device = forward_device(), home = input_ids.device();
    if (device == home) return run(input_ids, attention_mask, layers, final_norm);
    return run(input_ids.to(device), attention_mask.defined() ? attention_mask.to(device) : torch::Tensor(), layers,
               final_norm)
        .to(home);
  });
}

torch::Tensor Qwen3Model::linear(const torch::Tensor& x, const std::string& name) const {
  return linear_layer(x, name, "");
}

torch::Tensor Qwen3Model::run(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                              int64_t layers_to_run, bool final_norm) const {
  const int64_t batch = input_ids.size(0), seq = input_ids.size(1);
  torch::Tensor h = torch::embedding(param("embed_tokens.weight"), input_ids.to(torch::kInt64));
  if (layers_to_run > 0) {
    const torch::Tensor key_mask = attention_mask.defined() ? attention_mask.ne(0) : torch::Tensor();
    const torch::Device device = input_ids.device();
    const torch::Tensor allowed = qwen3_attention_mask(key_mask, batch, seq, device);
    // The tables are computed on the CPU, where the reference computed
    // them, and moved: the same float32 values on every device.
    const auto [cpu_cos, cpu_sin] = qwen3_rope_tables(config_.rope_theta, config_.head_dim, seq);
    const torch::Tensor cos = cpu_cos.to(device), sin = cpu_sin.to(device);
    for (int64_t i = 0; i < layers_to_run; ++i) {
      check_cancelled();  // a cancelled encoding stops within one layer
      h = decoder_layer(i, h, allowed, cos, sin);
    }
  }
  if (final_norm) h = rms_norm(h, param("norm.weight"), config_.rms_norm_eps);
  return h;
}

torch::Tensor Qwen3Model::decoder_layer(int64_t index, const torch::Tensor& h_in,
                                        const torch::Tensor& allowed, const torch::Tensor& cos,
                                        const torch::Tensor& sin) const {
  const Qwen3Config& c = config_;
  const int64_t batch = h_in.size(0), seq = h_in.size(1), hd = c.head_dim;
  const double eps = c.rms_norm_eps;
  const std::string p = absl::StrCat("layers.", index, ".");
  const std::string a = p + "self_attn.";

  const torch::Tensor x = rms_norm(h_in, param(p + "input_layernorm.weight"), eps);
  // q and k: projection, RMSNorm over each head, then RoPE.
  const auto heads_of = [&](const char* proj, const char* norm, int64_t heads) {
    const torch::Tensor projected = linear(x, absl::StrCat(a, proj, ".weight")).view({batch, seq, heads, hd});
    const torch::Tensor normed = rms_norm(projected, param(absl::StrCat(a, norm, ".weight")), eps);
    return apply_half_split_rope(normed.transpose(1, 2), cos, sin);
  };
  const torch::Tensor q = heads_of("q_proj", "q_norm", c.num_attention_heads);
  const torch::Tensor k = heads_of("k_proj", "k_norm", c.num_key_value_heads);
  const torch::Tensor v =
      linear(x, a + "v_proj.weight").view({batch, seq, c.num_key_value_heads, hd}).transpose(1, 2);
  const torch::Tensor attn = grouped_query_attention(q, k, v, allowed);
  torch::Tensor h = h_in + linear(attn.transpose(1, 2).reshape({batch, seq, c.num_attention_heads * hd}),
                                  a + "o_proj.weight");

  // SwiGLU: silu(gate) * up in place, the largest activation allocated once.
  const torch::Tensor y = rms_norm(h, param(p + "post_attention_layernorm.weight"), eps);
  // up_proj's output dies with this statement, before down_proj runs.
  const torch::Tensor hidden = silu_mul_(linear(y, p + "mlp.gate_proj.weight"), linear(y, p + "mlp.up_proj.weight"));
  return h.add_(linear(hidden, p + "mlp.down_proj.weight"));
}

}  // namespace diffusiond
