#include "core/models/clip/clip_model.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/models/common/tensor_text.h"
#include "core/models/clip/clip_params.h"
#include "core/util/cancellation_scope.h"
#include "core/util/exception_status.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

// Which keys each query may not see, [B, 1, L, L] bool: later positions
// and, with a mask, padding. A query left with no key sees every key, as
// transformers' mask has such rows (its SDPA path on torch < 2.5, where the
// reference ran, unmasks them; its eager path's all-minimum row softmaxes
// uniformly).
torch::Tensor blocked_keys(const torch::Tensor& key_mask, int64_t batch, int64_t seq, torch::Device device) {
  torch::Tensor blocked = torch::ones({seq, seq}, torch::TensorOptions().dtype(torch::kBool).device(device))
                              .triu(1)
                              .expand({batch, 1, seq, seq});
  if (!key_mask.defined()) return blocked;
  blocked = blocked.logical_or(key_mask.eq(0).view({batch, 1, 1, seq}));
  return blocked.logical_and(blocked.all(-1, /*keepdim=*/true).logical_not());
}

}  // namespace

absl::StatusOr<std::unique_ptr<ClipTextModel>> ClipTextModel::create(const ClipTextConfig& config,
                                                                     std::unique_ptr<WeightStore> weights,
                                                                     std::shared_ptr<const Tokenizer> tokenizer) {
  DIFFUSIOND_RETURN_IF_ERROR(config.validate());
  DIFFUSIOND_RETURN_IF_ERROR(check_weights_match_table(*weights, clip_parameter_table(config), "CLIP text"));
  return std::unique_ptr<ClipTextModel>(new ClipTextModel(config, std::move(weights), std::move(tokenizer)));
}

ClipTextModel::ClipTextModel(const ClipTextConfig& config, std::unique_ptr<WeightStore> weights,
                             std::shared_ptr<const Tokenizer> tokenizer)
    : TextEncoder(std::move(weights), std::move(tokenizer)), config_(config) {}

absl::Status ClipTextModel::check_inputs(const torch::Tensor& ids, const torch::Tensor& mask,
                                         int64_t hidden_layer) const {
  const ClipTextConfig& c = config_;
  DIFFUSIOND_RETURN_IF_ERROR(
      check_token_inputs("CLIP text", ids, mask, c.vocab_size, c.num_hidden_layers + 1, hidden_layer));
  if (ids.size(1) > c.max_position_embeddings) {
    return absl::InvalidArgumentError(absl::StrCat("CLIP text input_ids have ", ids.size(1),
                                                   " positions, but the model has ", c.max_position_embeddings,
                                                   " position embeddings; cut the text to at most that many tokens"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ClipTextOutputs> ClipTextModel::forward(const torch::Tensor& input_ids,
                                                       const torch::Tensor& attention_mask,
                                                       int64_t hidden_layer) const {
  DIFFUSIOND_RETURN_IF_ERROR(check_inputs(input_ids, attention_mask, hidden_layer));
  return status_of("the CLIP text forward", [&]() -> absl::StatusOr<ClipTextOutputs> {
    torch::NoGradGuard no_grad;
    // On a placement's device the inputs go there and the outputs come back.
    const torch::Device device = forward_device(), home = input_ids.device();
    if (device == home) return run(input_ids, attention_mask, hidden_layer);
    ClipTextOutputs out =
        run(input_ids.to(device), attention_mask.defined() ? attention_mask.to(device) : torch::Tensor(), hidden_layer);
    for (torch::Tensor* t :
         {&out.hidden_state, &out.last_hidden_state, &out.pooler_output, &out.text_embeds, &out.pooled_positions}) {
      if (t->defined()) *t = t->to(home);
    }
    return out;
  });
}

torch::Tensor ClipTextModel::layer_norm(const torch::Tensor& x, const std::string& module) const {
  return torch::layer_norm(x, {x.size(-1)}, param(module + ".weight"), param(module + ".bias"), config_.layer_norm_eps);
}

torch::Tensor ClipTextModel::linear(const torch::Tensor& x, const std::string& module) const {
  return linear_layer(x, module + ".weight", module + ".bias");
}

ClipTextOutputs ClipTextModel::run(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                   int64_t hidden_layer) const {
  const ClipTextConfig& c = config_;
  const int64_t batch = input_ids.size(0), seq = input_ids.size(1);
  const torch::Tensor ids = input_ids.to(torch::kInt64);
  // hidden_layer -1 is the final norm's output; the others index the
  // output_hidden_states tuple, [0] the embeddings.
  const int64_t wanted =
      hidden_layer == -1 ? -1 : (hidden_layer < 0 ? hidden_layer + c.num_hidden_layers + 1 : hidden_layer);
  ClipTextOutputs out;
  torch::Tensor h = torch::embedding(param("text_model.embeddings.token_embedding.weight"), ids) +
                    param("text_model.embeddings.position_embedding.weight").narrow(0, 0, seq);
  if (wanted == 0) out.hidden_state = h;
  const torch::Tensor blocked = blocked_keys(attention_mask, batch, seq, ids.device());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    check_cancelled();  // a cancelled encoding stops within one layer
    h = encoder_layer(i, h, blocked);
    if (wanted == i + 1) out.hidden_state = h;
  }
  out.last_hidden_state = layer_norm(h, "text_model.final_layer_norm");
  if (wanted == -1) out.hidden_state = out.last_hidden_state;
  // transformers casts the ids to int32 before argmax (for ONNX); the
  // values fit, so the positions are the same.
  const torch::Tensor keyed =
      c.pools_at_largest_id() ? ids.to(torch::kInt32) : ids.eq(c.eos_token_id).to(torch::kInt32);
  out.pooled_positions = keyed.argmax(-1);
  out.pooler_output = out.last_hidden_state.index({torch::arange(batch, ids.options()), out.pooled_positions});
  if (c.with_projection) out.text_embeds = linear_layer(out.pooler_output, "text_projection.weight", "");
  return out;
}

torch::Tensor ClipTextModel::encoder_layer(int64_t index, const torch::Tensor& h, const torch::Tensor& blocked) const {
  const std::string p = absl::StrCat("text_model.encoder.layers.", index, ".");
  torch::Tensor out = h + attention(p + "self_attn", layer_norm(h, p + "layer_norm1"), blocked);
  torch::Tensor y = linear(layer_norm(out, p + "layer_norm2"), p + "mlp.fc1");
  switch (config_.hidden_act) {
    case ClipActivation::kQuickGelu:
      // x * sigmoid(1.702 x), the product taken in place.
      y = (y * 1.702).sigmoid_().mul_(y);
      break;
    case ClipActivation::kGelu:
      y = torch::gelu(y);
      break;
    case ClipActivation::kGeluTanh:
      y = torch::gelu(y, "tanh");
      break;
  }
  return out.add_(linear(y, p + "mlp.fc2"));
}

torch::Tensor ClipTextModel::attention(const std::string& prefix, const torch::Tensor& x,
                                       const torch::Tensor& blocked) const {
  const int64_t batch = x.size(0), seq = x.size(1), heads = config_.num_attention_heads, hd = config_.head_dim();
  const auto heads_of = [&](const char* proj) {
    return linear(x, absl::StrCat(prefix, ".", proj)).view({batch, seq, heads, hd}).transpose(1, 2);
  };
  const torch::Tensor q = heads_of("q_proj"), k = heads_of("k_proj"), v = heads_of("v_proj");
  torch::Tensor probs;
  {
    // Scores at the compute dtype scaled after the product (as upstream's
    // eager path), softmax in float32, back to the compute dtype.
    torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1)).mul_(1.0 / std::sqrt(static_cast<double>(hd)));
    scores = scores.to(torch::kFloat32).masked_fill_(blocked, -std::numeric_limits<float>::infinity());
    probs = torch::softmax(scores, -1).to(x.scalar_type());
  }
  const torch::Tensor attn = torch::matmul(probs, v).transpose(1, 2).reshape({batch, seq, heads * hd});
  return linear(attn, prefix + ".out_proj");
}

}  // namespace diffusiond
