// ClipTokenizer: CLIP's BPE text <-> ids, as transformers' slow
// CLIPTokenizer does it (the tokenizer of FLUX.1's and Stable Diffusion's
// CLIP text encoders):
//
//   encode: cut out added tokens (<|startoftext|>, <|endoftext|>: exact,
//           case-sensitive, leftmost then longest); clean each stretch
//           between them (clip_text_cleaning.h: BasicTokenizer, lower case);
//           split it with CLIP's regex (pretokenizer.h); spell each piece's
//           UTF-8 bytes in GPT-2's byte symbols, the last with "</w>"; merge
//           by BPE rank. A piece that is exactly "<|startoftext|>" or
//           "<|endoftext|>" (upper-case text lower-cased by the cleaning)
//           is that token, as the reference's BPE cache maps it.
//   with_special_tokens: <|startoftext|> + ids + <|endoftext|> (bos, eos).
//   decode: as decode(ids, skip_special_tokens=False): the tokens' symbols
//           joined, as bytes decoded with U+FFFD for bad bytes, "</w>"
//           replaced by a space, stripped; added tokens that are not special
//           stand alone, joined with spaces; clean_up_tokenization_spaces
//           if the files set it.
//
// Not here: reading the files (core/text/clip_tokenizer_files.h), padding
// and truncation (core/text/token_batch.h), the ftfy cleaning path.
#ifndef DIFFUSIOND_CORE_TEXT_CLIP_TOKENIZER_H_
#define DIFFUSIOND_CORE_TEXT_CLIP_TOKENIZER_H_

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
#include "core/text/bpe_tokenizer.h"
#include "core/text/tokenizer.h"

namespace diffusiond {

// The word suffix CLIP's vocabulary spells word-final tokens with.
inline constexpr absl::string_view kClipEndOfWordSuffix = "</w>";

// What a CLIP tokenizer is made of, as read from its files. Defaults are
// CLIPTokenizer's own.
struct ClipTokenizerSpec {
  // Vocabulary, merges, added tokens and the pad token's content (empty:
  // the default "<|endoftext|>").
  TokenizerSpec bpe;
  std::string bos_token = "<|startoftext|>";
  std::string eos_token = "<|endoftext|>";
  std::string unk_token = "<|endoftext|>";
  // The reference's tokenizer.model_max_length (77 in CLIP's files; what
  // FLUX pads and truncates to); 0 if the files give none.
  int64_t model_max_length = 0;
  bool clean_up_tokenization_spaces = false;
};

// Immutable after create(); thread-safe.
class ClipTokenizer final : public Tokenizer {
 public:
  // Validates `spec` (BpeModel::create with the "</w>" suffix,
  // AddedTokenSplitter::create; also bos, eos and pad tokens that are
  // neither added nor in the vocabulary). INVALID_ARGUMENT naming
  // spec.bpe.source and the problem.
  static absl::StatusOr<std::unique_ptr<ClipTokenizer>> create(const ClipTokenizerSpec& spec);

  // Returns the ids of `text` without <|startoftext|> … <|endoftext|>.
  // INVALID_ARGUMENT naming the byte offset if `text` is not valid UTF-8.
  absl::StatusOr<std::vector<int32_t>> encode(absl::string_view text) const override;

  // Returns bos + `ids` + eos.
  std::vector<int32_t> with_special_tokens(std::vector<int32_t> ids) const override;
  int64_t special_tokens_added() const override { return 2; }

  // Returns the text of `ids`, special tokens included (see above).
  // INVALID_ARGUMENT naming the first id that is neither added nor in the
  // vocabulary.
  absl::StatusOr<std::string> decode(absl::Span<const int32_t> ids) const override;

  // Returns the id of `token` (an added token's content, else a vocabulary
  // token spelled in byte symbols), or -1.
  int32_t token_to_id(absl::string_view token) const override;

  // Returns the token with `id` as the reference's convert_ids_to_tokens
  // shows it (byte symbols with "</w>", or an added token's content), or
  // null.
  const std::string* id_to_token(int32_t id) const;

  int32_t pad_id() const override { return pad_id_; }
  int32_t bos_id() const { return bos_id_; }
  int32_t eos_id() const { return eos_id_; }
  int32_t id_limit() const override { return id_limit_; }
  // tokenizer_config.json's model_max_length; 0 if none.
  int64_t model_max_length() const { return model_max_length_; }
  const std::string& source() const override { return source_; }

 private:
  ClipTokenizer(std::string source, BpeModel bpe, AddedTokenSplitter added)
      : source_(std::move(source)), bpe_(std::move(bpe)), added_(std::move(added)) {}

  // Appends the ids of one stretch of text between added tokens.
  absl::Status encode_plain(absl::string_view text, std::vector<int32_t>* ids) const;

  std::string source_;
  BpeModel bpe_;
  AddedTokenSplitter added_;
  int32_t pad_id_ = -1;
  int32_t bos_id_ = -1;
  int32_t eos_id_ = -1;
  int32_t unk_id_ = -1;  // -1 if the files name none that exists
  int32_t id_limit_ = 0;
  int64_t model_max_length_ = 0;
  bool clean_up_tokenization_spaces_ = false;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_TEXT_CLIP_TOKENIZER_H_
