// TextEncoder: the text-encoder role. A Model that turns text into hidden
// states (and, where the architecture has one, a pooled vector) as a
// pipeline asks for them — how many tokens, padded or not, which hidden
// layer. Which encoding a pipeline asks for, and how the outputs become a
// denoiser's Conditioning, is the pipeline's recipe (core/pipeline/<name>/);
// the forward is the architecture's (core/models/<arch>/).
#ifndef DIFFUSIOND_CORE_MODELS_TEXT_ENCODER_H_
#define DIFFUSIOND_CORE_MODELS_TEXT_ENCODER_H_

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/checkpoint/checkpoint.h"
#include "core/models/model.h"
#include "core/text/token_batch.h"
#include "core/text/tokenizer.h"

namespace diffusiond {

// How a pipeline asks its text encoder for one text.
struct TextEncoding {
  std::string text;  // the prompt after the pipeline's template
  // At most this many tokens, special tokens included (the content is cut);
  // 0: no limit.
  int64_t max_tokens = 0;
  // Pad to max_tokens with the pad token (padding="max_length"); otherwise
  // only the text's own tokens are encoded.
  bool pad_to_max_tokens = false;
  // Run without an attention mask, so the text attends to the padding too
  // (FLUX's T5 is called so); otherwise padding is masked.
  bool attend_to_padding = false;
  // Which hidden state, indexed as Python indexes the reference's
  // output_hidden_states tuple: -1 is the last (after the final norm where
  // the architecture has one), -2 the output of the second to last layer.
  int64_t hidden_layer = -1;
  // When not empty, these hidden states (each indexed as hidden_layer is)
  // stacked per token instead: EncodedText.hidden_states [L, n, D], as
  // Krea 2 taps its encoder (text_encoder_select_layers). Encoders that
  // give one hidden state refuse it.
  std::vector<int64_t> hidden_layers;
  // Tokenized on its own and appended after the text's tokens (cut and
  // padded as above), never cut: Krea 2's template tail, which upstream
  // keeps whole when it cuts a prompt. max_tokens bounds the text alone.
  std::string suffix;
};

// An upper bound on the tokens `request` encodes with a tokenizer that adds
// `special_tokens` around the text (and around its suffix), known before
// tokenizing: max_tokens when set, else one per byte plus the special
// tokens and one; and as much again for a suffix.
int64_t tokens_bound(const TextEncoding& request, int64_t special_tokens);

struct EncodedText {
  // [L, D] at the compute dtype: every row, padding included.
  torch::Tensor hidden_states;
  // [L] bool: true for the text's tokens, false for padding.
  torch::Tensor attention_mask;
  // [P] at the compute dtype, the architecture's pooled output (CLIP's,
  // taken at the end-of-text token); undefined when it has none.
  torch::Tensor pooled;
  int64_t tokens = 0;  // the text's tokens after truncation, special tokens included
};

// Immutable after construction; encodes may run concurrently.
class TextEncoder : public Model {
 public:
  TextEncoder(std::unique_ptr<WeightStore> weights, std::shared_ptr<const Tokenizer> tokenizer)
      : Model(std::move(weights)), tokenizer_(std::move(tokenizer)) {}
  ModelRole role() const final { return ModelRole::kTextEncoder; }

  // Encodes one text as `request` asks. FAILED_PRECONDITION when the
  // encoder was loaded without a tokenizer; INVALID_ARGUMENT for text that
  // is not UTF-8 or a hidden layer out of range; the token's reason when a
  // CancellationScope cancels it between layers.
  virtual absl::StatusOr<EncodedText> encode(const TextEncoding& request) const = 0;

  // Bytes an encode of `tokens` tokens allocates beyond the weights, at
  // its peak: what the engine reserves before it runs.
  virtual int64_t encode_activation_bytes(int64_t tokens) const = 0;
  // The bytes an encode of `request` reserves: encode_activation_bytes of
  // the most tokens it can give, by default; an encoder whose working
  // memory depends on more of the request (a stack of hidden states) says
  // so.
  virtual int64_t request_activation_bytes(const TextEncoding& request) const;
  // A Step over input_ids [B, L]: B encodes of L tokens.
  ActivationEstimate step_activations(const NamedTensors& inputs, bool device_is_cpu) const override;

  // The tokenizer it was loaded with, or null.
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }

  // An upper bound on the tokens `request` encodes, known before
  // tokenizing: tokens_bound() with the tokenizer's wrapping.
  int64_t max_tokens_of(const TextEncoding& request) const;

 protected:
  // Tokenizes `request` (FAILED_PRECONDITION without a tokenizer) into
  // int64 [1, L] ids and a [1, L] int64 mask (1 = token), the suffix's
  // tokens after the text's.
  struct Tokens {
    torch::Tensor input_ids;
    torch::Tensor attention_mask;
    int64_t count = 0;
  };
  absl::StatusOr<Tokens> tokenize(const TextEncoding& request) const;

  // INVALID_ARGUMENT, each message opening with `name`, unless `input_ids`
  // is integer [B, L] (B, L >= 1) with ids in [0, vocab_size),
  // `attention_mask` (when defined) is bool or integer of the same shape,
  // and `layer` picks one of `hidden_states` (negative counts from the end).
  static absl::Status check_token_inputs(absl::string_view name, const torch::Tensor& input_ids,
                                         const torch::Tensor& attention_mask, int64_t vocab_size,
                                         int64_t hidden_states, int64_t layer);

  // The encode of an architecture without a pooled output: tokenize(), then
  // `hidden_states(ids, mask, request.hidden_layer)` [1, L, D], the mask
  // undefined when the request attends to padding. INVALID_ARGUMENT for a
  // request for a stack of hidden states.
  using HiddenStatesFn = std::function<absl::StatusOr<torch::Tensor>(
      const torch::Tensor& input_ids, const torch::Tensor& attention_mask, int64_t layer)>;
  absl::StatusOr<EncodedText> encode_hidden_states(const TextEncoding& request,
                                                   const HiddenStatesFn& hidden_states) const;

 private:
  const std::shared_ptr<const Tokenizer> tokenizer_;  // may be null
};

// Returns, per item i, hidden[i] at the rows where mask[i] is nonzero, in
// order: [L_i, hidden] (L_i may be 0). `hidden` [B, L, D]; `mask` [B, L] or
// undefined (every row kept). REQUIRES: shapes agree (checked by callers).
std::vector<torch::Tensor> token_rows(const torch::Tensor& hidden, const torch::Tensor& mask);

// The folders a text encoder's tokenizer may be in, most likely first: the
// model's own folder, then the pipeline's sibling for it: tokenizer/ for
// text_encoder/, tokenizer_2/ for text_encoder_2/ (diffusers' layout), and
// tokenizer/ beside a folder of any other name.
std::vector<std::string> tokenizer_folders(const Checkpoint& checkpoint);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_TEXT_ENCODER_H_
