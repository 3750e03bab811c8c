// TextEncoderRecipe<Config, Encoder>: what the LoadRecipes of the text
// encoders (CLIP, T5, Qwen3) share: the config, the tokenizer and a note on
// where they came from, sizing a call from the config alone
// (text_encoder_activations.h), and building the encoder from the weights.
//
// Not here: recognising a checkpoint and reading its config (each
// architecture's <arch>_family.cc), or how a recipe describes itself and
// names its tensors.
#ifndef DIFFUSIOND_CORE_MODELS_COMMON_TEXT_ENCODER_RECIPE_H_
#define DIFFUSIOND_CORE_MODELS_COMMON_TEXT_ENCODER_RECIPE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/models/activation_estimate.h"
#include "core/models/model.h"
#include "core/models/model_family.h"
#include "core/models/param_table.h"
#include "core/models/text_encoder_activations.h"
#include "core/precision/weight_store.h"
#include "core/text/tokenizer.h"

namespace diffusiond {

// Config must have a text_encode_activation_bytes overload, and Encoder a
// static create(const Config&, std::unique_ptr<WeightStore>,
// std::shared_ptr<const Tokenizer>). Immutable after construction.
template <typename Config, typename Encoder>
class TextEncoderRecipe : public TableRecipe {
 public:
  // An encode of query.text_tokens tokens at query.compute_dtype; a per-use
  // FP8 decode, which only the weights tell, is left out.
  int64_t least_call_bytes(const ActivationQuery& query) const override {
    return text_encode_activation_bytes(config_, query.compute_dtype, query.text_tokens, 0);
  }

  // Returns Encoder::create's model, or its error unchanged.
  absl::StatusOr<std::unique_ptr<Model>> build(std::unique_ptr<WeightStore> weights) const override {
    absl::StatusOr<std::unique_ptr<Encoder>> model = Encoder::create(config_, std::move(weights), tokenizer_);
    if (!model.ok()) return model.status();
    return std::unique_ptr<Model>(std::move(*model));
  }

 protected:
  TextEncoderRecipe(std::vector<ParamSpec> table, const Config& config, std::shared_ptr<const Tokenizer> tokenizer,
                    std::string note)
      : TableRecipe(std::move(table)), config_(config), tokenizer_(std::move(tokenizer)), note_(std::move(note)) {}

  const Config config_;
  const std::shared_ptr<const Tokenizer> tokenizer_;  // may be null
  const std::string note_;                            // where the config and the tokenizer came from
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_COMMON_TEXT_ENCODER_RECIPE_H_
