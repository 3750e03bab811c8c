// Reading byte-level BPE tokenizers from their files, in either of the two
// forms a model folder carries:
//   - tokenizer.json (the `tokenizers` library's format): model.vocab,
//     model.merges ("a b" strings or [a, b] pairs), added_tokens;
//   - vocab.json + merges.txt + tokenizer_config.json (added_tokens_decoder,
//     pad_token), which transformers' slow tokenizers read.
// read_tokenizer_json, read_vocab_and_merges and load_tokenizer read Qwen's
// (BpeTokenizer). Settings BpeTokenizer does not implement (another
// normaliser or pre-tokenizer regex, byte fallback, word suffixes, added
// tokens that strip spaces) are refused rather than silently tokenized
// differently. The single-file readers below serve other BPE tokenizers too
// (CLIP's, core/text/clip_tokenizer_files.h), which check their own pipeline.
//
// Not here: tokenizing (core/text/bpe_tokenizer.h).
#ifndef DIFFUSIOND_CORE_TEXT_TOKENIZER_FILES_H_
#define DIFFUSIOND_CORE_TEXT_TOKENIZER_FILES_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/text/added_tokens.h"
#include "core/text/bpe_tokenizer.h"

namespace diffusiond {

// Reads vocab.json ({"token": id, ...}). INVALID_ARGUMENT naming the file
// for an unreadable or malformed one.
absl::StatusOr<std::vector<std::pair<std::string, int32_t>>> read_vocab_json(absl::string_view path);

// How a merges.txt is read: the reference tokenizers differ.
struct MergesTxtFormat {
  // CLIPTokenizer drops the first line of the file (leading white space
  // stripped) whatever it holds; Qwen2Tokenizer only a "#version:" first
  // line. Default false (Qwen2's).
  bool always_skip_first_line = false;
  // At most this many lines after the first are read, blank ones counted
  // (CLIPTokenizer reads 49152 - 256 - 2); 0: all. Default 0.
  int64_t max_lines = 0;
};

// Reads merges.txt: one merge ("a b") per line, blank lines skipped.
// INVALID_ARGUMENT naming the file and the line for an unreadable file or a
// line that is not two tokens.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> read_merges_txt(absl::string_view path,
                                                                                const MergesTxtFormat& format);

// What tokenizer_config.json (or special_tokens_map.json, which names the
// same tokens) says, as transformers reads it. A token is named by a string
// or an AddedToken object with "content".
struct TokenizerConfig {
  std::string tokenizer_class;           // "" if not named
  std::vector<AddedToken> added_tokens;  // added_tokens_decoder
  std::string pad_token;                 // each "" if not named (or null)
  std::string bos_token;
  std::string eos_token;
  std::string unk_token;
  // 0 if not given, or too large for int64 (transformers' 1e30: no limit).
  int64_t model_max_length = 0;
  std::optional<bool> clean_up_tokenization_spaces;
};

// Reads a tokenizer_config.json or special_tokens_map.json. INVALID_ARGUMENT
// naming the file and the field for an unreadable file, a malformed field,
// or an added token that strips spaces or must be a single word.
absl::StatusOr<TokenizerConfig> read_tokenizer_config(absl::string_view path);

// Reads the BPE model of tokenizer.json at `path` (model.vocab,
// model.merges, added_tokens, padding.pad_token) without checking the
// normaliser and pre-tokenizer, which the caller implements: the model must
// be byte-level BPE with `end_of_word_suffix` (empty: none) and nothing else
// (no byte fallback, dropout or subword prefix). Errors as
// read_tokenizer_json.
absl::StatusOr<TokenizerSpec> read_tokenizer_json_model(absl::string_view path,
                                                        absl::string_view end_of_word_suffix);

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
