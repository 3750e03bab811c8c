// The pre-tokenizers: split text into the pieces that BPE then encodes one
// at a time, exactly as upstream's regexes find their matches (leftmost,
// first alternative that matches, greedy with backtracking). std::regex has
// neither Unicode classes nor the lookahead, so these are hand-written
// scanners over code points; the character classes come from
// core/text/unicode.h.
//
// Qwen2's regex (every code point starts a match of some alternative, so the
// pieces cover the text with no gaps):
//
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}
//   | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// CLIP's regex, compiled with IGNORECASE (white space matches nothing and
// is dropped):
//
//   <\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+
//   |[\p{N}]|[^\s\p{L}\p{N}]+
//
// Not here: added-token splitting and BPE (core/text/bpe_tokenizer.h,
// core/text/clip_tokenizer.h), CLIP's text cleaning before its split
// (core/text/clip_text_cleaning.h).
#ifndef DIFFUSIOND_CORE_TEXT_PRETOKENIZER_H_
#define DIFFUSIOND_CORE_TEXT_PRETOKENIZER_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace diffusiond {

// Returns the pieces of `text` in order; their concatenation is `text`.
// REQUIRES: `text` is valid UTF-8 (validate_utf8).
std::vector<std::string> split_qwen2_pieces(absl::string_view text);

// Returns the matches of CLIP's regex in `text`, in order; the white space
// between them is not returned.
// REQUIRES: `text` is valid UTF-8 (validate_utf8).
std::vector<std::string> split_clip_pieces(absl::string_view text);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_TEXT_PRETOKENIZER_H_
