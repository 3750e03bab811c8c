// Token batches: tokenized texts cut and padded to one length, with their
// attention mask, as the reference's tokenizer(texts, padding=...,
// max_length=..., truncation=True) returns them (right side throughout).
//
// Not here: tokenizing itself (tokenizer.h), prompt templates (each
// pipeline's recipe).
#ifndef DIFFUSIOND_CORE_TEXT_TOKEN_BATCH_H_
#define DIFFUSIOND_CORE_TEXT_TOKEN_BATCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/text/tokenizer.h"

namespace diffusiond {

// A batch of token rows of equal length, row-major.
struct TokenBatch {
  int64_t batch = 0;
  int64_t length = 0;
  std::vector<int32_t> ids;            // batch * length
  std::vector<uint8_t> attention_mask; // batch * length; 1 = token, 0 = padding
  std::vector<int64_t> token_counts;   // per row: how many leading entries are tokens
};

// Returns `rows` cut or right-padded with `pad_id` to exactly `max_length`
// each (as padding="max_length", truncation=True, right side). Returns
// INVALID_ARGUMENT if max_length < 1 or pad_id < 0.
absl::StatusOr<TokenBatch> pad_or_truncate(const std::vector<std::vector<int32_t>>& rows,
                                           int64_t max_length, int32_t pad_id);

struct TokenizeOptions {
  // At most this many ids per text, special tokens included (the content is
  // cut, the wrapping kept); 0: no limit.
  int64_t max_length = 0;
  // Pad every row to max_length (padding="max_length"); otherwise to the
  // longest row (padding="longest").
  bool pad_to_max_length = false;
  // Wrap each text in the tokenizer's special tokens (the reference's
  // add_special_tokens=True, its default).
  bool add_special_tokens = true;
};

// Tokenizes `texts` into one batch. INVALID_ARGUMENT for an empty batch, a
// text that is not UTF-8 (naming the text's index and the byte offset),
// padding that needs a pad token the tokenizer lacks, or a max_length that
// leaves no room for content.
absl::StatusOr<TokenBatch> tokenize_batch(const Tokenizer& tokenizer, absl::Span<const std::string> texts,
                                          const TokenizeOptions& options);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_TEXT_TOKEN_BATCH_H_
