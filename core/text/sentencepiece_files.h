// Reading a T5 / UMT5 tokenizer folder as transformers' slow T5Tokenizer
// reads it with from_pretrained:
//   - spiece.model (required): the SentencePiece model;
//   - tokenizer_config.json (optional): legacy, add_prefix_space, extra_ids,
//     clean_up_tokenization_spaces, the special tokens and
//     added_tokens_decoder (with lstrip / rstrip);
//   - without added_tokens_decoder, the older special_tokens_map.json and
//     added_tokens.json (their added tokens strip nothing).
// A folder with only tokenizer.json (the Rust `tokenizers` format) is
// refused: rebuilding a SentencePiece model from its Unigram vocabulary and
// normaliser would be a second, untested tokenizer; FLUX.1 and Wan ship
// spiece.model beside it. Settings the tokenizer does not implement
// (another tokenizer class, single_word tokens, sampling options) are
// refused rather than silently tokenized differently.
//
// Not here: tokenizing (sentencepiece_tokenizer.h).
#ifndef DIFFUSIOND_CORE_TEXT_SENTENCEPIECE_FILES_H_
#define DIFFUSIOND_CORE_TEXT_SENTENCEPIECE_FILES_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/text/sentencepiece_tokenizer.h"

namespace diffusiond {

// Reads the files of folder `dir` into a spec. INVALID_ARGUMENT naming the
// file and the problem: a missing or unreadable spiece.model (saying it is
// needed when only tokenizer.json is there), malformed JSON, a field of the
// wrong type, or an unsupported setting.
absl::StatusOr<SentencePieceTokenizerSpec> read_sentencepiece_spec(absl::string_view dir);

// read_sentencepiece_spec, then SentencePieceTokenizer::create. Errors as
// those.
absl::StatusOr<std::unique_ptr<SentencePieceTokenizer>> load_sentencepiece_tokenizer(absl::string_view dir);

// A tokenizer found beside a model, and a note saying where.
struct FoundTokenizer {
  std::shared_ptr<const Tokenizer> tokenizer;  // null when none was found
  std::string note;                            // "tokenizer from <dir>" or "no tokenizer found"
};
// Loads the tokenizer of the first of `folders` that holds spiece.model or
// tokenizer.json; none: a null tokenizer. A folder that has those files
// but cannot be read fails with load_sentencepiece_tokenizer's error.
absl::StatusOr<FoundTokenizer> find_sentencepiece_tokenizer(const std::vector<std::string>& folders);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_TEXT_SENTENCEPIECE_FILES_H_
