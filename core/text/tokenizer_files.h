// Reading a Qwen-style byte-level BPE tokenizer from its files, in either of
// the two forms a model folder carries:
//   - tokenizer.json (the `tokenizers` library's format): model.vocab,
//     model.merges ("a b" strings or [a, b] pairs), added_tokens;
//   - vocab.json + merges.txt + tokenizer_config.json (added_tokens_decoder,
//     pad_token), which transformers' slow Qwen2Tokenizer reads.
// Settings the Tokenizer does not implement (another normaliser or
// pre-tokenizer regex, byte fallback, word suffixes, added tokens that strip
// spaces) are refused rather than silently tokenized differently.
//
// Not here: tokenizing (core/text/tokenizer.h).
#ifndef DIFFUSIOND_CORE_TEXT_TOKENIZER_FILES_H_
#define DIFFUSIOND_CORE_TEXT_TOKENIZER_FILES_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/text/bpe_tokenizer.h"

namespace diffusiond {

// Reads tokenizer.json at `path`. The pad token is the file's padding
// pad_token, if any. Returns INVALID_ARGUMENT naming the file and what is
// wrong for an unreadable, malformed or unsupported file.
absl::StatusOr<TokenizerSpec> read_tokenizer_json(absl::string_view path);

// Reads vocab.json, merges.txt and tokenizer_config.json (the added tokens
// and the pad token). Returns INVALID_ARGUMENT naming the file and what is
// wrong (for merges.txt, the line) for an unreadable or malformed file.
absl::StatusOr<TokenizerSpec> read_vocab_and_merges(absl::string_view vocab_path,
                                                    absl::string_view merges_path,
                                                    absl::string_view config_path);

// Reads the tokenizer in folder `dir`: tokenizer.json if present (with the
// pad token from tokenizer_config.json when that exists), else vocab.json +
// merges.txt + tokenizer_config.json. Errors as above.
absl::StatusOr<std::unique_ptr<BpeTokenizer>> load_tokenizer(absl::string_view dir);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_TEXT_TOKENIZER_FILES_H_
