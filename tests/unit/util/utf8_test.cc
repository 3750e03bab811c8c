#include "core/util/utf8.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(Utf8Test, AcceptsWellFormedText) {
  EXPECT_THAT(validate_utf8("", "t"), IsOk());
  EXPECT_THAT(validate_utf8("caf\u00E9 \u4E00 \U0001F642 \U0010FFFF", "t"), IsOk());
}

TEST(Utf8Test, NamesTheByteOffsetOfTheBadSequence) {
  EXPECT_THAT(validate_utf8("ab\x80", "prompt"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("prompt"), HasSubstr("byte offset 2"), HasSubstr("0x80"))));
  // Overlong, surrogate, past U+10FFFF.
  EXPECT_THAT(validate_utf8("x\xC0\xAF", "t"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("offset 1")));
  EXPECT_THAT(validate_utf8("xy\xED\xA0\x80", "t"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("offset 2 (byte 0xED)")));
  EXPECT_THAT(validate_utf8("\xF4\x90\x80\x80", "t"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("offset 0")));
  EXPECT_THAT(validate_utf8("abc\xE4\xB8", "t"),
              StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("offset 3"), HasSubstr("cut off"))));
  EXPECT_THAT(validate_utf8("\xE4\xB8x", "t"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("offset 0")));
}

TEST(Utf8Test, DecodesCodePointsWithOffsets) {
  const std::vector<CodePoint> points = decode_utf8("a\u00E9\U0001F642");
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points[0].value, U'a');
  EXPECT_EQ(points[1].value, U'\u00E9');
  EXPECT_EQ(points[1].offset, 1u);
  EXPECT_EQ(points[2].value, U'\U0001F642');
  EXPECT_EQ(points[2].offset, 3u);
}

TEST(Utf8Test, AppendEncodesEveryLength) {
  std::string out;
  for (char32_t c : {U'a', U'\u00E9', U'\u4E00', U'\U0001F642'}) append_utf8(c, &out);
  EXPECT_EQ(out, "a\u00E9\u4E00\U0001F642");
}

// Python's bytes.decode("utf-8", errors="replace") gives the same.
TEST(Utf8Test, LossyDecodeReplacesEachMaximalBadSubsequence) {
  const std::string fffd = "\uFFFD";
  EXPECT_EQ(decode_utf8_lossy("a\xE4\xB8"), "a" + fffd);
  EXPECT_EQ(decode_utf8_lossy("\xC0\xAF"), fffd + fffd);
  EXPECT_EQ(decode_utf8_lossy("\xED\xA0\x80"), fffd + fffd + fffd);
  EXPECT_EQ(decode_utf8_lossy("\xF0\x9F\x98"), fffd);
  EXPECT_EQ(decode_utf8_lossy("\xF4\x90\x80\x80"), fffd + fffd + fffd + fffd);
  EXPECT_EQ(decode_utf8_lossy("\xE4\xB8x"), fffd + "x");
  EXPECT_EQ(decode_utf8_lossy("ok \u4E00"), "ok \u4E00");
}

}  // namespace
}  // namespace diffusiond
