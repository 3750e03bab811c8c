// BpeTokenizer: Qwen's byte-level BPE text <-> ids, as the reference
// (transformers' Qwen2Tokenizer) does it:
//
//   encode: NFC-normalise the whole text; cut out added tokens (leftmost,
//           longest, anywhere); split each stretch between them with the
//           Qwen2 pre-tokenizer; spell each piece's UTF-8 bytes in GPT-2's
//           byte symbols; merge by BPE rank. No BOS/EOS is added.
//   decode: added tokens become their content; each run of BPE tokens
//           becomes its bytes, decoded as UTF-8 with U+FFFD for bad bytes
//           (the reference's errors="replace"); the results are joined
//           with nothing between them.
//
// Not here: reading the files (core/text/tokenizer_files.h), padding and
// truncation (core/text/token_batch.h), prompt templates (each pipeline's
// recipe, core/pipeline/<name>/).
#ifndef DIFFUSIOND_CORE_TEXT_BPE_TOKENIZER_H_
#define DIFFUSIOND_CORE_TEXT_BPE_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/text/added_tokens.h"
#include "core/text/bpe.h"
#include "core/text/tokenizer.h"

namespace diffusiond {

// What a tokenizer is made of, as read from its files.
struct TokenizerSpec {
  std::string source;  // the file(s) it came from, for messages
  std::vector<std::pair<std::string, int32_t>> vocab;  // token in byte symbols -> id
  std::vector<std::pair<std::string, std::string>> merges;  // rank = position
  std::vector<AddedToken> added_tokens;
  std::string pad_token;  // the padding token's content; empty if the files name none
};

// Immutable after create(); thread-safe.
class BpeTokenizer final : public Tokenizer {
 public:
  // Validates `spec` (see BpeModel::create and AddedTokenSplitter::create;
  // also a pad token that is neither added nor in the vocabulary). Returns
  // INVALID_ARGUMENT naming spec.source and the problem.
  static absl::StatusOr<std::unique_ptr<BpeTokenizer>> create(const TokenizerSpec& spec);

  // Returns the ids of `text`. Returns INVALID_ARGUMENT naming the byte
  // offset if `text` is not valid UTF-8.
  absl::StatusOr<std::vector<int32_t>> encode(absl::string_view text) const override;

  // Returns the text of `ids`. Returns INVALID_ARGUMENT naming the first id
  // that is neither an added token nor in the vocabulary.
  absl::StatusOr<std::string> decode(absl::Span<const int32_t> ids) const override;

  // Returns the id of `token` (an added token's content, or a vocabulary
  // token spelled in byte symbols), or -1.
  int32_t token_to_id(absl::string_view token) const override;

  // Returns the token with `id` as the reference's convert_ids_to_tokens
  // shows it (byte symbols, or an added token's content), or null.
  const std::string* id_to_token(int32_t id) const;

  // Returns the padding token's id, or -1 if the files name none.
  int32_t pad_id() const override { return pad_id_; }

  // Returns one more than the largest id (vocabulary or added).
  int32_t id_limit() const override { return id_limit_; }

  const std::string& source() const override { return source_; }

 private:
  BpeTokenizer(std::string source, BpeModel bpe, AddedTokenSplitter added)
      : source_(std::move(source)), bpe_(std::move(bpe)), added_(std::move(added)) {}

  std::string source_;
  BpeModel bpe_;
  AddedTokenSplitter added_;
  int32_t pad_id_ = -1;
  int32_t id_limit_ = 0;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_TEXT_BPE_TOKENIZER_H_
