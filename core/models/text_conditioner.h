// TextConditioner: the text-conditioner role. A Model between a pipeline's
// text encoder and its denoiser: it reads the encoder's hidden states of a
// prompt through the prompt's own tokens in a vocabulary of its own, and
// gives the context the denoiser attends to (Anima's AnimaTextConditioner,
// the "LLM adapter": Qwen3's last hidden states, queried by T5 token ids).
// It owns that second tokenizer, found beside it as a text encoder finds
// its own. Which encoder feeds it, and how its output becomes the
// denoiser's Conditioning, is the pipeline's recipe (core/pipeline/<name>/).
//
// Not here: the architectures (core/models/<arch>/), running it (the
// engine's condition_text).
#ifndef DIFFUSIOND_CORE_MODELS_TEXT_CONDITIONER_H_
#define DIFFUSIOND_CORE_MODELS_TEXT_CONDITIONER_H_

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/models/model.h"
#include "core/text/tokenizer.h"

namespace diffusiond {

// One prompt to condition.
struct ConditionerRequest {
  // The prompt, as the conditioner's own tokenizer reads it (with its
  // special tokens).
  std::string text;
  // At most this many target tokens, special tokens included (the content
  // is cut); 0: no limit.
  int64_t max_tokens = 0;
  // The text encoder's hidden states of the prompt, [L, source_dim], every
  // row (padding rows zero), and which rows are tokens: [L] bool or integer.
  // L may be 0 (a prompt of no tokens): nothing to attend to.
  torch::Tensor source_hidden_states;
  torch::Tensor source_mask;
};

struct ConditionedText {
  // [L', D] at the compute dtype: the denoiser's context, every row (the
  // architecture's own padding included).
  torch::Tensor hidden_states;
  int64_t tokens = 0;  // the target tokens after truncation, special tokens included
};

// Immutable after construction; calls may run concurrently.
class TextConditioner : public Model {
 public:
  TextConditioner(std::unique_ptr<WeightStore> weights, std::shared_ptr<const Tokenizer> tokenizer)
      : Model(std::move(weights)), tokenizer_(std::move(tokenizer)) {}
  ModelRole role() const final { return ModelRole::kTextConditioner; }

  // Conditions one prompt as `request` asks. FAILED_PRECONDITION when the
  // conditioner was loaded without a tokenizer; INVALID_ARGUMENT for text
  // that is not UTF-8 or source states of the wrong shape; the token's
  // reason when a CancellationScope cancels it between blocks.
  virtual absl::StatusOr<ConditionedText> condition(const ConditionerRequest& request) const = 0;

  // Bytes one call over `source_rows` encoder rows and `target_tokens`
  // tokens allocates beyond the weights, at its peak: what the engine
  // reserves before it runs.
  virtual int64_t condition_activation_bytes(int64_t source_rows, int64_t target_tokens) const = 0;
  // condition_activation_bytes of `request`, its target tokens bounded
  // before tokenizing (tokens_bound: max_tokens, else one per byte).
  int64_t request_activation_bytes(const ConditionerRequest& request) const;

  // The tokenizer it was loaded with, or null.
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }

 private:
  const std::shared_ptr<const Tokenizer> tokenizer_;  // may be null
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_TEXT_CONDITIONER_H_
