// Reading a CLIP tokenizer from a tokenizer folder (diffusers' tokenizer/,
// openai/clip-vit-*'s own folder), as transformers' slow CLIPTokenizer
// reads it:
//   - vocab.json and merges.txt (the first line dropped whatever it holds,
//     at most 49152 - 256 - 2 merges), or, when vocab.json is absent, the
//     vocabulary and merges of tokenizer.json (its BPE model must have the
//     "</w>" word suffix; its normaliser and pre-tokenizer are the fast
//     tokenizer's and are not used: the slow tokenizer's cleaning is);
//   - tokenizer_config.json, if present: added_tokens_decoder, the bos, eos,
//     unk and pad tokens, model_max_length, clean_up_tokenization_spaces,
//     and tokenizer_class, which must be CLIPTokenizer(Fast) if given;
//   - special_tokens_map.json, if present: its tokens override the
//     config's (as from_pretrained does).
// The special tokens are added tokens wherever they are found (the
// vocabulary lists them in CLIP's files).
//
// Not here: tokenizing (core/text/clip_tokenizer.h).
#ifndef DIFFUSIOND_CORE_TEXT_CLIP_TOKENIZER_FILES_H_
#define DIFFUSIOND_CORE_TEXT_CLIP_TOKENIZER_FILES_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/text/clip_tokenizer.h"

namespace diffusiond {

// The merges CLIPTokenizer reads at most: 49152 - 256 - 2.
inline constexpr int64_t kClipMaxMerges = 48894;

// Reads the CLIP tokenizer files in folder `dir`. INVALID_ARGUMENT naming
// the file and what is wrong (for merges.txt, the line) for a missing,
// unreadable, malformed or non-CLIP file.
absl::StatusOr<ClipTokenizerSpec> read_clip_tokenizer_files(absl::string_view dir);

// Reads and validates the CLIP tokenizer in folder `dir`. Errors as
// read_clip_tokenizer_files and ClipTokenizer::create.
absl::StatusOr<std::unique_ptr<ClipTokenizer>> load_clip_tokenizer(absl::string_view dir);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_TEXT_CLIP_TOKENIZER_FILES_H_
