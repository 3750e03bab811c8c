// T5Encoder: a port of transformers' T5EncoderModel (T5 v1.1, FLUX.1's
// text_encoder_2) and UMT5EncoderModel (Wan's text encoder) forward as a
// text encoder:
//
//   h = shared[ids]                            (no sqrt(d_model) scaling)
//   per block (pre-norm, no biases anywhere):
//     h += o(attention(rms(h)))   q·kᵀ unscaled, + relative position bias
//                                 + key mask, softmax in float32
//     h += wo(gelu_tanh(wi_0(rms(h))) * wi_1(rms(h)))   (gated-gelu)
//       or wo(relu(wi(rms(h))))                          (relu)
//   last_hidden_state = rms(h) with final_layer_norm
//
// rms is T5LayerNorm: x * rsqrt(mean(x²) + eps) * weight, no mean, no bias.
// T5 computes the position bias in block 0 only and shares it (the mask
// added once); UMT5 computes it in every block from that block's table.
// The mask covers keys only: padding rows are computed like any other.
//
// Precision: every op at the compute dtype. transformers keeps `wo` in
// float32 when loading at bfloat16 / float16 (which also turns its
// residual stream float32); here `wo` is only kept out of FP8, and at
// float16 the residual is clamped after each sub-layer as upstream's
// T5Block does for float16 states.
//
// Not here: tokenization (core/text/sentencepiece_tokenizer.h) or what a
// pipeline takes from the outputs (core/pipeline/<name>/).
#ifndef DIFFUSIOND_CORE_MODELS_T5_T5_MODEL_H_
#define DIFFUSIOND_CORE_MODELS_T5_T5_MODEL_H_

#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/models/t5/t5_config.h"
#include "core/models/text_encoder.h"
#include "core/text/tokenizer.h"

namespace diffusiond {

inline constexpr absl::string_view kT5Architecture = "t5";
inline constexpr absl::string_view kUmt5Architecture = "umt5";

// Immutable after construction; forwards may run concurrently.
class T5Encoder final : public TextEncoder {
 public:
  // Checks that `weights` holds exactly the parameter table of `config`
  // with the right shapes. FAILED_PRECONDITION naming the first missing,
  // misshapen or unexpected tensor. `tokenizer` (may be null) serves
  // encode().
  static absl::StatusOr<std::unique_ptr<T5Encoder>> create(const T5Config& config,
                                                           std::unique_ptr<WeightStore> weights,
                                                           std::shared_ptr<const Tokenizer> tokenizer = nullptr);

  absl::string_view architecture() const override { return config_.umt5 ? kUmt5Architecture : kT5Architecture; }
  const T5Config& config() const { return config_; }

  // Named inputs: "input_ids" integer [B, L] (B, L >= 1, ids below
  // vocab_size); "attention_mask" [B, L] bool or integer, nonzero = token
  // (optional: every key attended, as FLUX calls T5). Output:
  // "last_hidden_state" [B, L, d_model], every row (padding included).
  // INVALID_ARGUMENT naming a missing, unexpected or misshapen input.
  absl::StatusOr<NamedTensors> step(const NamedTensors& inputs) const override;

  // A placement keeps or streams the encoder blocks.
  std::vector<std::string> block_containers() const override { return {"encoder.block"}; }

  // Tokenizes `request` and returns hidden_states[request.hidden_layer]
  // (padding masked unless attend_to_padding) and the tokenizer's mask; no
  // pooled output.
  absl::StatusOr<EncodedText> encode(const TextEncoding& request) const override;
  // Counts, for one text of `tokens` tokens at the compute dtype: the
  // residual stream and the sub-layers' activations, the float32 position
  // bias [heads, L, L] with what builds it, one batch item's float32 scores
  // and probabilities [heads, L, L] (and their compute-dtype copies), and
  // the largest weight a forward materialises.
  int64_t encode_activation_bytes(int64_t tokens) const override;

  // Returns hidden_states[layer] of upstream's output_hidden_states, [B, L,
  // d_model] at the compute dtype: [0] the embeddings, [k] the output of
  // block k-1 for k < num_layers, [num_layers] final_layer_norm of the last
  // block's output (= last_hidden_state). `layer` may be negative (from the
  // end); blocks after it are not run. `input_ids` integer [B, L];
  // `attention_mask` [B, L] (nonzero = token) or undefined. INVALID_ARGUMENT
  // for bad shapes, ids outside the vocabulary or a layer out of range; the
  // token's reason when cancelled between blocks; INTERNAL or
  // RESOURCE_EXHAUSTED if libtorch fails.
  absl::StatusOr<torch::Tensor> hidden_states(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                              int64_t layer) const;

  // Returns block `block`'s relative position bias for `seq` tokens,
  // [num_heads, seq, seq] float32, before the mask: upstream's
  // compute_bias(seq, seq)[0]. INVALID_ARGUMENT if the block has no table of
  // its own (T5 blocks after 0) or seq < 1.
  absl::StatusOr<torch::Tensor> position_bias(int64_t block, int64_t seq) const;

 private:
  T5Encoder(const T5Config& config, std::unique_ptr<WeightStore> weights,
            std::shared_ptr<const Tokenizer> tokenizer);

  torch::Tensor run(const torch::Tensor& input_ids, const torch::Tensor& attention_mask, int64_t blocks_to_run,
                    bool final_norm) const;
  // One block. `shared_bias` [heads, L, L] float32: T5's block-0 bias, or
  // undefined when the block reads its own table (UMT5) from `buckets`.
  torch::Tensor block(int64_t index, const torch::Tensor& h, const torch::Tensor& shared_bias,
                      const torch::Tensor& buckets, const torch::Tensor& key_bias) const;
  torch::Tensor bias_of(int64_t block, const torch::Tensor& buckets) const;
  torch::Tensor feed_forward(const std::string& prefix, const torch::Tensor& x) const;

  const T5Config config_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_T5_T5_MODEL_H_
