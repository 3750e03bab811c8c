#include "core/models/t5/t5_model.h"

#include "absl/strings/str_cat.h"
#include "core/models/common/layers.h"
#include "core/models/t5/t5_attention.h"
#include "core/models/t5/t5_params.h"
#include "core/util/cancellation_scope.h"
#include "core/util/exception_status.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

std::string block_prefix(int64_t index) { return absl::StrCat("encoder.block.", index, "."); }

// Upstream's T5Block keeps float16 states finite: clamped to the largest
// float16 (less 1000 once anything overflowed).
torch::Tensor clamp_float16(torch::Tensor h) {
  if (h.scalar_type() != torch::kHalf) return h;
  constexpr double largest = 65504.0;  // finfo(float16).max
  const double bound = h.isinf().any().item<bool>() ? largest - 1000 : largest;
  return h.clamp_(-bound, bound);
}

}  // namespace

absl::StatusOr<std::unique_ptr<T5Encoder>> T5Encoder::create(const T5Config& config,
                                                             std::unique_ptr<WeightStore> weights,
                                                             std::shared_ptr<const Tokenizer> tokenizer) {
  if (absl::Status s = config.validate(); !s.ok()) return s;
  DIFFUSIOND_RETURN_IF_ERROR(check_weights_match_table(*weights, t5_parameter_table(config), config.name()));
  return std::unique_ptr<T5Encoder>(new T5Encoder(config, std::move(weights), std::move(tokenizer)));
}

T5Encoder::T5Encoder(const T5Config& config, std::unique_ptr<WeightStore> weights,
                     std::shared_ptr<const Tokenizer> tokenizer)
    : TextEncoder(std::move(weights), std::move(tokenizer)), config_(config) {}

absl::StatusOr<torch::Tensor> T5Encoder::hidden_states(const torch::Tensor& input_ids,
                                                       const torch::Tensor& attention_mask, int64_t layer) const {
  const int64_t states = config_.num_layers + 1;
  DIFFUSIOND_RETURN_IF_ERROR(
      check_token_inputs(config_.name(), input_ids, attention_mask, config_.vocab_size, states, layer));
  const int64_t index = layer < 0 ? layer + states : layer;
  return status_of(absl::StrCat("the ", config_.name(), " forward"), [&]() -> absl::StatusOr<torch::Tensor> {
    torch::NoGradGuard no_grad;
    const bool final_norm = index == config_.num_layers;
    // run() moves the inputs to a placement's device; the output comes back.
    return run(input_ids, attention_mask, index, final_norm).to(input_ids.device());
  });
}

absl::StatusOr<torch::Tensor> T5Encoder::position_bias(int64_t block, int64_t seq) const {
  if (block < 0 || block >= config_.num_layers || !config_.has_relative_bias(block) || seq < 1) {
    return absl::InvalidArgumentError(absl::StrCat(config_.name(), ": block ", block, " of ", config_.num_layers,
                                                   " has no relative_attention_bias of its own, or seq ", seq,
                                                   " < 1"));
  }
  return status_of("the position bias", [&]() -> absl::StatusOr<torch::Tensor> {
    torch::NoGradGuard no_grad;
    return bias_of(block, t5_position_buckets(seq, seq, config_.relative_attention_num_buckets,
                                              config_.relative_attention_max_distance, forward_device()));
  });
}

torch::Tensor T5Encoder::bias_of(int64_t block, const torch::Tensor& buckets) const {
  return t5_position_bias(param(block_prefix(block) + "layer.0.SelfAttention.relative_attention_bias.weight"),
                          buckets);
}

torch::Tensor T5Encoder::run(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                             int64_t blocks_to_run, bool final_norm) const {
  const torch::Device device = forward_device();
  const int64_t seq = input_ids.size(1);
  torch::Tensor h = torch::embedding(param(kT5EmbeddingName), input_ids.to(device, torch::kInt64));
  if (blocks_to_run > 0) {
    const torch::Tensor key_bias =
        attention_mask.defined() ? t5_key_bias(attention_mask.to(device)) : torch::Tensor();
    const torch::Tensor buckets = t5_position_buckets(seq, seq, config_.relative_attention_num_buckets,
                                                      config_.relative_attention_max_distance, device);
    // T5: block 0's table serves every block. UMT5: each block builds its
    // own inside block(), so one bias is alive at a time.
    const torch::Tensor shared_bias = config_.umt5 ? torch::Tensor() : bias_of(0, buckets);
    for (int64_t i = 0; i < blocks_to_run; ++i) {
      check_cancelled();  // a cancelled encoding stops within one block
      h = block(i, h, shared_bias, buckets, key_bias);
    }
  }
  if (final_norm) h = rms_norm(h, param("encoder.final_layer_norm.weight"), config_.layer_norm_epsilon);
  return h;
}

torch::Tensor T5Encoder::block(int64_t index, const torch::Tensor& h_in, const torch::Tensor& shared_bias,
                               const torch::Tensor& buckets, const torch::Tensor& key_bias) const {
  const T5Config& c = config_;
  const int64_t batch = h_in.size(0), seq = h_in.size(1);
  const std::string p = block_prefix(index);
  const std::string a = p + "layer.0.SelfAttention.";

  const torch::Tensor x = rms_norm(h_in, param(p + "layer.0.layer_norm.weight"), c.layer_norm_epsilon);
  const auto heads_of = [&](const char* proj) {
    const torch::Tensor projected = linear_layer(x, absl::StrCat(a, proj, ".weight"), "");
    return projected.view({batch, seq, c.num_heads, c.d_kv}).transpose(1, 2);
  };
  const torch::Tensor attn = t5_attention(heads_of("q"), heads_of("k"), heads_of("v"),
                                          shared_bias.defined() ? shared_bias : bias_of(index, buckets), key_bias);
  torch::Tensor h =
      h_in + linear_layer(attn.transpose(1, 2).reshape({batch, seq, c.inner_dim()}), a + "o.weight", "");
  h = clamp_float16(std::move(h));

  const torch::Tensor y = rms_norm(h, param(p + "layer.1.layer_norm.weight"), c.layer_norm_epsilon);
  h.add_(feed_forward(p + "layer.1.DenseReluDense.", y));
  return clamp_float16(std::move(h));
}

torch::Tensor T5Encoder::feed_forward(const std::string& prefix, const torch::Tensor& x) const {
  torch::Tensor hidden;
  if (config_.feed_forward == T5FeedForward::kGatedGelu) {
    // gelu_new: the tanh approximation, on wi_0 only.
    hidden = torch::gelu(linear_layer(x, prefix + "wi_0.weight", ""), "tanh");
    hidden.mul_(linear_layer(x, prefix + "wi_1.weight", ""));
  } else {
    hidden = linear_layer(x, prefix + "wi.weight", "");
    hidden.relu_();
  }
  return linear_layer(hidden, prefix + "wo.weight", "");
}

}  // namespace diffusiond
