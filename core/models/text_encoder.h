// TextEncoder: a Model that turns a prompt into the conditioning its
// pipeline's denoiser reads (Z-Image's Qwen3 encoder: "cap_feats"), with
// the tokenizer and prompt template that pipeline applies.
#ifndef DIFFUSIOND_CORE_MODELS_TEXT_ENCODER_H_
#define DIFFUSIOND_CORE_MODELS_TEXT_ENCODER_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/models/conditioning.h"
#include "core/models/model.h"

namespace diffusiond {

struct EncodedPrompt {
  Conditioning conditioning;
  int64_t tokens = 0;  // after the template and truncation
};

// Immutable after construction; encodes may run concurrently.
class TextEncoder : public Model {
 public:
  using Model::Model;
  ModelRole role() const final { return ModelRole::kTextEncoder; }

  // Encodes `prompt`. FAILED_PRECONDITION when the encoder was loaded
  // without a tokenizer; INVALID_ARGUMENT for text that is not UTF-8.
  virtual absl::StatusOr<EncodedPrompt> encode_prompt(const std::string& prompt) const = 0;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_TEXT_ENCODER_H_
