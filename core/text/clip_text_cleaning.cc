#include "core/text/clip_text_cleaning.h"

#include <vector>

#include "absl/strings/str_join.h"
#include "core/text/unicode.h"
#include "core/util/status_macros.h"
#include "core/util/utf8.h"

namespace diffusiond {
namespace {

// Python's str.isspace(): the White_Space property plus U+001C..U+001F
// (bidirectional class B or S). After step 1 only ' ', U+2028 and U+2029 are
// left of these, but the whole set costs nothing.
bool is_python_space(char32_t c) { return is_white_space(c) || (c >= 0x1C && c <= 0x1F); }

// BasicTokenizer._clean_text and _tokenize_chinese_chars.
std::string clean_and_space_ideographs(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const CodePoint& point : decode_utf8(text)) {
    const char32_t c = point.value;
    const bool tab_or_line = c == '\t' || c == '\n' || c == '\r';
    if (c == 0 || c == 0xFFFD || (is_other(c) && !tab_or_line)) continue;
    if (c == ' ' || tab_or_line || is_space_separator(c)) {
      out.push_back(' ');
    } else if (is_cjk_ideograph(c)) {
      out.push_back(' ');
      append_utf8(c, &out);
      out.push_back(' ');
    } else {
      append_utf8(c, &out);
    }
  }
  return out;
}

// str.split() with no argument: runs of white space separate words.
std::vector<std::string> split_words(absl::string_view text) {
  std::vector<std::string> words;
  std::string word;
  for (const CodePoint& point : decode_utf8(text)) {
    if (is_python_space(point.value)) {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
    } else {
      append_utf8(point.value, &word);
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

}  // namespace

bool is_cjk_ideograph(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

absl::StatusOr<std::string> clean_clip_text(absl::string_view text) {
  DIFFUSIOND_RETURN_IF_ERROR(validate_utf8(text, "text to tokenize"));
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::string normalized,
                              nfc_normalize(clean_and_space_ideographs(text), "text to tokenize"));
  // Lower-casing the joined words equals lower-casing each: a space ends
  // the context final sigma looks at.
  return to_lower(absl::StrJoin(split_words(normalized), " "), "text to tokenize");
}

}  // namespace diffusiond
