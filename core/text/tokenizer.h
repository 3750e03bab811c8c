// Tokenizer: text <-> token ids, the interface every text encoder's
// tokenizer implements — byte-level BPE (bpe_tokenizer.h: Qwen), CLIP's
// BPE with word suffixes, and SentencePiece Unigram (T5, UMT5).
//
// encode() gives the ids of the text alone; with_special_tokens() wraps
// them as the reference's build_inputs_with_special_tokens does (T5 appends
// </s>, CLIP adds <|startoftext|> … <|endoftext|>, Qwen adds nothing), so
// truncation can cut the content and keep the wrapping (token_batch.h).
//
// Not here: padding, truncation and batches (token_batch.h), reading
// tokenizer files (each implementation's own), prompt templates (each
// pipeline's recipe, core/pipeline/<name>/).
#ifndef DIFFUSIOND_CORE_TEXT_TOKENIZER_H_
#define DIFFUSIOND_CORE_TEXT_TOKENIZER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace diffusiond {

// Implementations are immutable after creation and thread-safe.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Returns the ids of `text` without the special-token wrapping (as the
  // reference's tokenizer(text, add_special_tokens=False)). INVALID_ARGUMENT
  // naming the byte offset if `text` is not valid UTF-8.
  virtual absl::StatusOr<std::vector<int32_t>> encode(absl::string_view text) const = 0;

  // Returns `ids` wrapped in the special tokens the reference adds by
  // default. Default: `ids` unchanged.
  virtual std::vector<int32_t> with_special_tokens(std::vector<int32_t> ids) const { return ids; }

  // How many ids with_special_tokens() adds around content (the
  // reference's num_special_tokens_to_add()): truncation keeps that room.
  virtual int64_t special_tokens_added() const { return 0; }

  // Returns the text of `ids`. INVALID_ARGUMENT naming the first id the
  // tokenizer does not know.
  virtual absl::StatusOr<std::string> decode(absl::Span<const int32_t> ids) const = 0;

  // Returns the id of `token` (as the reference's convert_tokens_to_ids
  // spells it), or -1.
  virtual int32_t token_to_id(absl::string_view token) const = 0;

  // Returns the padding token's id, or -1 if the files name none.
  virtual int32_t pad_id() const = 0;

  // Returns one more than the largest id the tokenizer can produce.
  virtual int32_t id_limit() const = 0;

  // The file(s) it was read from, for messages.
  virtual const std::string& source() const = 0;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_TEXT_TOKENIZER_H_
