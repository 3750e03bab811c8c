// The Qwen2 pre-tokenizer scanner on edge cases of the regex. Expected
// pieces are what Python's `regex` module's findall gives for Qwen2's
// pattern (the reference tokenizer's own engine).
#include "core/text/pretokenizer.h"

#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace diffusiond {
namespace {

using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

struct Case {
  std::string text;
  std::vector<std::string> pieces;
};

void expect_pieces(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    const std::vector<std::string> pieces = split_qwen2_pieces(c.text);
    EXPECT_THAT(pieces, ElementsAreArray(c.pieces));
    EXPECT_EQ(absl::StrJoin(pieces, ""), c.text);  // no gaps, no overlap
  }
}

TEST(Qwen2PretokenizerTest, EmptyTextHasNoPieces) { EXPECT_THAT(split_qwen2_pieces(""), IsEmpty()); }

// \s+(?!\S) leaves the last space of a run for the word after it; at the end
// of the text the whole run is one piece; a lone space before a word joins it.
TEST(Qwen2PretokenizerTest, WhiteSpaceRuns) {
  expect_pieces({
      {"a   b", {"a", "  ", " b"}},
      {"a   ", {"a", "   "}},
      {"   ", {"   "}},
      {" ", {" "}},
      {"\t\tx", {"\t", "\tx"}},
      {" ,,, ", {" ,,,", " "}},
  });
}

// \s*[\r\n]+ ends at the last line break of a white-space run.
TEST(Qwen2PretokenizerTest, LineBreaks) {
  expect_pieces({
      {"x \n\n  y", {"x", " \n\n", " ", " y"}},
      {"line\r\nnext", {"line", "\r\n", "next"}},
      {"\r\n\r\n", {"\r\n\r\n"}},
      {"end \r\n", {"end", " \r\n"}},
      {"?!\n\n", {"?!\n\n"}},
      {"  \n  \n\t\n", {"  \n  \n\t\n"}},
  });
}

// (?i:...) makes contractions case-insensitive, including U+017F (long s),
// which case-folds to 's'.
TEST(Qwen2PretokenizerTest, ContractionsWithCapitals) {
  expect_pieces({
      {"I'M DON'T we'LL she'S they'D You'Re I'Ve",
       {"I", "'M", " DON", "'T", " we", "'LL", " she", "'S", " they", "'D", " You", "'Re", " I", "'Ve"}},
      {"it'x", {"it", "'x"}},
      {"'s'", {"'s", "'"}},
      {"o'\u017Fa", {"o", "'\u017F", "a"}},
      {"''ll", {"''", "ll"}},
  });
}

// Emoji, ZWJ and regional indicators are neither letters, numbers nor
// space: one symbol run. A combining mark is a non-letter prefix of the
// letters after it.
TEST(Qwen2PretokenizerTest, EmojiSequencesAndCombiningMarks) {
  expect_pieces({
      {"\U0001F469\u200D\U0001F469\u200D\U0001F467 ok", {"\U0001F469\u200D\U0001F469\u200D\U0001F467", " ok"}},
      {"\U0001F1EF\U0001F1F5!", {"\U0001F1EF\U0001F1F5!"}},
      {"e\u0301t\u00E9", {"e", "\u0301t\u00E9"}},
      {"\u0301abc", {"\u0301abc"}},
  });
}

// \s is the White_Space property: no-break spaces, U+3000, U+2028/9 and
// U+0085 are space; U+001C (a str.isspace() character) is not.
TEST(Qwen2PretokenizerTest, UnicodeWhiteSpaceSet) {
  expect_pieces({
      {"x\u00A0\u00A0y", {"x", "\u00A0", "\u00A0y"}},
      {"a\u3000b", {"a", "\u3000b"}},
      {"\u2028\u2029z", {"\u2028", "\u2029z"}},
      {"a\u0085b", {"a", "\u0085b"}},
      {"a\034 b", {"a", "\034", " b"}},
  });
}

// \p{N} takes one number character at a time, including No and Nl.
TEST(Qwen2PretokenizerTest, NumbersOneAtATime) {
  expect_pieces({
      {"12345", {"1", "2", "3", "4", "5"}},
      {"3.14", {"3", ".", "1", "4"}},
      {"\u00BD\u2167x", {"\u00BD", "\u2167", "x"}},
  });
}

}  // namespace
}  // namespace diffusiond
