// SentencePieceTokenizer: T5's and UMT5's tokenizer (FLUX.1's tokenizer_2,
// Wan's tokenizer) as transformers' slow T5Tokenizer runs it over a
// SentencePiece Unigram model:
//
//   encode: cut out the added tokens (<pad>, </s>, <unk>, the <extra_id_N>
//           sentinels; leftmost, longest); a token with lstrip / rstrip
//           eats the whitespace beside it (Python's str.strip); each
//           stretch between them goes through sentencepiece. legacy=true:
//           every stretch gets sentencepiece's dummy prefix "▁".
//           legacy=false: the model runs without the dummy prefix, "▁" in
//           the text becomes a space, one "▁" is put before the whole text,
//           and a stretch gets a "▁" only where it starts with a space.
//           Pieces map to ids (added tokens first, unknown pieces to
//           <unk>); nothing is appended.
//   with_special_tokens: appends </s> unless the ids already end with it.
//   decode: as the reference's decode(ids, skip_special_tokens=...).
//
// Byte fallback, the normaliser (NFKC and whitespace folding) and the
// Viterbi segmentation are the library's own (sentencepiece_model.h).
//
// Not here: reading a tokenizer folder (sentencepiece_files.h), padding and
// truncation (token_batch.h), a pipeline's prompt cleaning (Wan's
// prompt_clean is the pipeline's, core/pipeline/).
#ifndef DIFFUSIOND_CORE_TEXT_SENTENCEPIECE_TOKENIZER_H_
#define DIFFUSIOND_CORE_TEXT_SENTENCEPIECE_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/text/added_tokens.h"
#include "core/text/sentencepiece_model.h"
#include "core/text/tokenizer.h"

namespace diffusiond {

// An added token with the flags the slow tokenizer honours.
struct SentencePieceAddedToken {
  int32_t id = -1;
  std::string content;
  bool special = false;
  bool lstrip = false;  // eats the whitespace on its left
  bool rstrip = false;  // eats the whitespace on its right
};

// What the files say, before T5Tokenizer's construction resolves it (see
// create()). Defaults are T5Tokenizer's.
struct SentencePieceTokenizerSpec {
  std::string source;  // the file(s) it came from, for messages
  std::string model;   // the bytes of spiece.model
  bool legacy = true;
  bool add_prefix_space = true;
  bool clean_up_tokenization_spaces = false;
  // Sentinels <extra_id_0> … placed after the model's pieces, in reverse.
  int64_t extra_ids = 100;
  // The files' added tokens by id (added_tokens_decoder, or the older
  // added_tokens.json); they override T5's own sentinel entries.
  std::vector<SentencePieceAddedToken> added_tokens;
  // The special-token attributes' contents; empty: none (T5 names no
  // bos, sep, cls or mask token).
  std::string bos_token;
  std::string eos_token = "</s>";
  std::string unk_token = "<unk>";
  std::string sep_token;
  std::string pad_token = "<pad>";
  std::string cls_token;
  std::string mask_token;
  // Empty optional: T5's default, the extra_ids sentinels.
  std::optional<std::vector<std::string>> additional_special_tokens;
};

struct SentencePieceDecodeOptions {
  // Drop every special token (</s>, <pad>, <unk>, the sentinels) and what
  // decodes from <unk>. Default false, as the reference's decode().
  bool skip_special_tokens = false;
};

// Immutable after create(); thread-safe.
class SentencePieceTokenizer final : public Tokenizer {
 public:
  // Loads spec.model and resolves the added tokens as T5Tokenizer does:
  // T5's sentinels (<extra_id_i> at pieces - 1 + extra_ids - i, lstrip and
  // rstrip), overridden by the files' added tokens, then each special token
  // not yet added: at its piece's id when the model has the piece, else
  // after every known id. INVALID_ARGUMENT naming spec.source for a model
  // the library refuses, sentinels that disagree with extra_ids, an added
  // token whose content or id repeats, or legacy=false without an unk token.
  static absl::StatusOr<std::unique_ptr<SentencePieceTokenizer>> create(const SentencePieceTokenizerSpec& spec);

  // Returns the ids of `text`, no </s> appended. INVALID_ARGUMENT naming the
  // byte offset if `text` is not valid UTF-8.
  absl::StatusOr<std::vector<int32_t>> encode(absl::string_view text) const override;

  // Appends </s> unless `ids` already ends with it (T5's
  // build_inputs_with_special_tokens).
  std::vector<int32_t> with_special_tokens(std::vector<int32_t> ids) const override;
  int64_t special_tokens_added() const override { return eos_id_ >= 0 ? 1 : 0; }

  // Returns the text of `ids` as the reference's decode(ids) with
  // skip_special_tokens false. INVALID_ARGUMENT naming the first id that is
  // neither an added token nor a piece.
  absl::StatusOr<std::string> decode(absl::Span<const int32_t> ids) const override {
    return decode(ids, SentencePieceDecodeOptions());
  }
  absl::StatusOr<std::string> decode(absl::Span<const int32_t> ids, const SentencePieceDecodeOptions& options) const;

  // Returns the id of an added token's content or of a piece, or -1.
  int32_t token_to_id(absl::string_view token) const override;
  // Returns the token of `id` as convert_ids_to_tokens shows it (an added
  // token's content or the piece), or null.
  const std::string* id_to_token(int32_t id) const;

  int32_t pad_id() const override { return pad_id_; }
  // The </s> id, or -1 if the files name no eos token.
  int32_t eos_id() const { return eos_id_; }
  // One more than the largest id: the model's pieces and the added tokens.
  int32_t id_limit() const override { return id_limit_; }
  const std::string& source() const override { return source_; }
  bool legacy() const { return legacy_; }

 private:
  struct Segment {
    std::string text;
    int32_t added_id;  // -1 for text between added tokens
  };

  SentencePieceTokenizer() = default;

  // The slow tokenizer's tokenize(): token strings (added contents, pieces).
  absl::StatusOr<std::vector<std::string>> tokenize(absl::string_view text) const;
  // Its _tokenize() of one stretch between added tokens.
  absl::Status encode_stretch(const std::string& text, std::vector<std::string>* pieces) const;
  // Its convert_tokens_to_string().
  std::string tokens_to_string(std::vector<std::string> tokens) const;
  bool is_special(const std::string& token) const { return special_tokens_.contains(token); }

  std::string source_;
  std::unique_ptr<SentencePieceModel> model_;
  AddedTokenSplitter added_;
  absl::flat_hash_map<int32_t, SentencePieceAddedToken> added_flags_;
  absl::flat_hash_map<std::string, int32_t> added_ids_;
  absl::flat_hash_set<std::string> special_tokens_;  // all_special_tokens
  absl::flat_hash_set<int32_t> special_ids_;         // all_special_ids
  // Added tokens decode() keeps apart (the reference's legacy_added_tokens).
  absl::flat_hash_set<std::string> standalone_tokens_;
  std::string unk_token_;
  int64_t unk_token_length_ = 0;  // pieces of unk_token_ alone (legacy=false)
  bool legacy_ = true;
  bool add_prefix_space_ = true;
  bool clean_up_tokenization_spaces_ = false;
  int32_t pad_id_ = -1;
  int32_t eos_id_ = -1;
  int32_t id_limit_ = 0;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_TEXT_SENTENCEPIECE_TOKENIZER_H_
