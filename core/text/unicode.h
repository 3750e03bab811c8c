// The Unicode facts the tokenizers depend on, from ICU: the character
// classes their pre-tokenizer regexes name (\p{L}, \p{N}, \s), the general
// categories CLIP's text cleaning tests (C*, Zs), NFC, and Python's
// str.lower().
//
// \s is the White_Space property, the set Python's `regex` module (which the
// reference tokenizer runs the pattern with) matches: it includes U+0085 and
// the no-break spaces, and excludes U+001C..U+001F (unlike str.isspace()).
//
// Not here: UTF-8 handling (core/util/utf8.h).
#ifndef DIFFUSIOND_CORE_TEXT_UNICODE_H_
#define DIFFUSIOND_CORE_TEXT_UNICODE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

// Returns true for general categories Lu, Ll, Lt, Lm and Lo (\p{L}).
bool is_letter(char32_t c);

// Returns true for general categories Nd, Nl and No (\p{N}).
bool is_number(char32_t c);

// Returns true for the White_Space property (\s).
bool is_white_space(char32_t c);

// Returns true for general categories Cc, Cf, Cs, Co and Cn (the "C"
// categories Python's unicodedata.category() starts with).
bool is_other(char32_t c);

// Returns true for general category Zs (space separators).
bool is_space_separator(char32_t c);

// Returns `text` lower-cased with the full, language-independent Unicode
// mappings Python's str.lower() applies (one code point may become several;
// final sigma by context). INVALID_ARGUMENT, prefixed with `what`, for text
// that is not valid UTF-8.
absl::StatusOr<std::string> to_lower(absl::string_view text, absl::string_view what);

// Returns `text` in Normalization Form C. Returns INVALID_ARGUMENT, prefixed
// with `what`, for text that is not valid UTF-8 (naming the byte offset), and
// INTERNAL if ICU cannot normalise.
absl::StatusOr<std::string> nfc_normalize(absl::string_view text, absl::string_view what);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_TEXT_UNICODE_H_
