// UTF-8 at the tokenizer's edges: validating input (an error names the byte
// offset, nothing is silently replaced), splitting valid text into code
// points, and the lossy decode that turns token bytes back into text.
//
// Not here: Unicode properties and normalisation (core/text/unicode.h).
#ifndef DIFFUSIOND_CORE_UTIL_UTF8_H_
#define DIFFUSIOND_CORE_UTIL_UTF8_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

// One code point of a UTF-8 string and where its bytes start.
struct CodePoint {
  char32_t value;
  size_t offset;  // byte offset of the first byte in the string
};

// Returns OK if `text` is well-formed UTF-8 (no overlongs, surrogates or
// values above U+10FFFF). Otherwise INVALID_ARGUMENT prefixed with `what`,
// naming the byte offset and value of the first bad byte.
absl::Status validate_utf8(absl::string_view text, absl::string_view what);

// Returns the code points of `text` with their byte offsets.
// REQUIRES: validate_utf8(text) is OK.
std::vector<CodePoint> decode_utf8(absl::string_view text);

// Appends the UTF-8 encoding of `c` to `out`. REQUIRES: c is a scalar value.
void append_utf8(char32_t c, std::string* out);

// Returns `bytes` as UTF-8 with every maximal ill-formed subsequence replaced
// by U+FFFD, the policy of Python's bytes.decode("utf-8", errors="replace").
std::string decode_utf8_lossy(absl::string_view bytes);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_UTIL_UTF8_H_
