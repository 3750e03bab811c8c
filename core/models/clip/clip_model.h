// ClipTextModel: a port of transformers' CLIPTextModel (and
// CLIPTextModelWithProjection) forward as a text encoder — FLUX.1's
// text_encoder, Stable Diffusion's CLIP-L:
//
//   x = token_embedding[ids] + position_embedding[0..L-1]
//   per layer (pre-LN, biases throughout):
//     x += out_proj(attention(layer_norm1(x)))   q·k scaled by head_dim^-0.5,
//                                                causal plus padding mask,
//                                                softmax in float32
//     x += fc2(act(fc1(layer_norm2(x))))         quick_gelu or gelu per config
//   last_hidden_state = final_layer_norm(x)
//   pooler_output[b] = last_hidden_state[b, p_b], where p_b is, as
//     transformers chooses by config: for eos_token_id 2 (the legacy value
//     FLUX.1 and SD ship) the position of the largest id (first on ties:
//     <|endoftext|> is the largest id, and pad = <|endoftext|> leaves the
//     first one pooled); otherwise the first position of eos_token_id (0 if
//     absent). The mask plays no part in it.
//   text_embeds = text_projection(pooler_output)   (WithProjection only)
//
// Not here: tokenisation (core/text/clip_tokenizer.h) or what a pipeline
// takes from the outputs (core/pipeline/<name>/).
#ifndef DIFFUSIOND_CORE_MODELS_CLIP_CLIP_MODEL_H_
#define DIFFUSIOND_CORE_MODELS_CLIP_CLIP_MODEL_H_

#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/models/clip/clip_config.h"
#include "core/models/text_encoder.h"
#include "core/text/tokenizer.h"

namespace diffusiond {

inline constexpr absl::string_view kClipTextArchitecture = "clip-text";

// One forward's results, at the compute dtype, on the device of the ids.
struct ClipTextOutputs {
  torch::Tensor hidden_state;       // [B, L, hidden] the hidden state asked for
  torch::Tensor last_hidden_state;  // [B, L, hidden] after final_layer_norm
  torch::Tensor pooler_output;      // [B, hidden]
  torch::Tensor text_embeds;        // [B, projection_dim]; undefined without a projection
  torch::Tensor pooled_positions;   // [B] int64: the p_b above
};

// Immutable after construction; forwards may run concurrently.
class ClipTextModel final : public TextEncoder {
 public:
  // Checks that `weights` holds exactly the parameter table of `config`
  // with the right shapes. FAILED_PRECONDITION naming the first missing,
  // misshapen or unexpected tensor. `tokenizer` (may be null) serves
  // encode().
  static absl::StatusOr<std::unique_ptr<ClipTextModel>> create(const ClipTextConfig& config,
                                                               std::unique_ptr<WeightStore> weights,
                                                               std::shared_ptr<const Tokenizer> tokenizer = nullptr);

  absl::string_view architecture() const override { return kClipTextArchitecture; }
  const ClipTextConfig& config() const { return config_; }

  // Runs the model on `input_ids` (integer [B, L], 1 <= L <=
  // max_position_embeddings, ids in the vocabulary) with `attention_mask`
  // ([B, L] bool or integer, nonzero = token; undefined: none, as FLUX calls
  // it — the causal mask alone then keeps padding out of the pooled row).
  // `hidden_layer` picks hidden_state: -1 is last_hidden_state (after the
  // final norm); any other value indexes transformers' output_hidden_states
  // as Python does — [0] the embeddings, [k] the output of layer k-1,
  // [num_hidden_layers] the last layer's output before the final norm, -2
  // the output of the second to last layer. A query that may see no key at
  // all (a mask with zeros before the first token) sees every key.
  // INVALID_ARGUMENT naming a bad input or a layer out of range; the
  // token's reason when cancelled between layers; RESOURCE_EXHAUSTED or
  // INTERNAL if libtorch fails.
  absl::StatusOr<ClipTextOutputs> forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                          int64_t hidden_layer = -1) const;

  // Named inputs: "input_ids" integer [B, L]; "attention_mask" [B, L]
  // (optional). Outputs: "last_hidden_state" [B, L, hidden_size],
  // "pooler_output" [B, hidden_size], and with a projection "text_embeds"
  // [B, projection_dim]. INVALID_ARGUMENT naming a missing, unexpected or
  // misshapen input.
  absl::StatusOr<NamedTensors> step(const NamedTensors& inputs) const override;

  // A placement keeps or streams the encoder layers.
  std::vector<std::string> block_containers() const override { return {"text_model.encoder.layers"}; }

  // Tokenizes `request` and returns hidden_states[request.hidden_layer] as
  // forward() indexes it, the tokenizer's mask, and as `pooled` the model's
  // pooled output (pooler_output; text_embeds for CLIPTextModelWithProjection).
  // Padding is masked unless attend_to_padding. INVALID_ARGUMENT also when
  // the text makes more tokens than the position table holds and
  // max_tokens does not cut them.
  absl::StatusOr<EncodedText> encode(const TextEncoding& request) const override;
  int64_t encode_activation_bytes(int64_t tokens) const override;

 private:
  ClipTextModel(const ClipTextConfig& config, std::unique_ptr<WeightStore> weights,
                std::shared_ptr<const Tokenizer> tokenizer);

  absl::Status check_inputs(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                            int64_t hidden_layer) const;
  ClipTextOutputs run(const torch::Tensor& input_ids, const torch::Tensor& attention_mask, int64_t hidden_layer) const;
  // `blocked` [B, 1, L, L] bool: the keys each query may not see.
  torch::Tensor encoder_layer(int64_t index, const torch::Tensor& x, const torch::Tensor& blocked) const;
  torch::Tensor attention(const std::string& prefix, const torch::Tensor& x, const torch::Tensor& blocked) const;
  torch::Tensor layer_norm(const torch::Tensor& x, const std::string& module) const;
  torch::Tensor linear(const torch::Tensor& x, const std::string& module) const;

  const ClipTextConfig config_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_CLIP_CLIP_MODEL_H_
