#include "core/text/bpe_tokenizer.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/byte_level_spec.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::byte_level_spec;
using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int32_t kA = 400, kALonger = 401, kThink = 402;

TokenizerSpec test_spec() {
  TokenizerSpec spec = byte_level_spec({{"h", "i"}, {" ", "w"}});  // 256 = "hi", 257 = " w"
  spec.added_tokens = {{kA, "<|a|>", true}, {kALonger, "<|a|>+", true}, {kThink, "<think>", false}};
  spec.pad_token = "<|a|>";
  return spec;
}

std::unique_ptr<BpeTokenizer> make(const TokenizerSpec& spec) {
  absl::StatusOr<std::unique_ptr<BpeTokenizer>> tokenizer = BpeTokenizer::create(spec);
  EXPECT_THAT(tokenizer, IsOk());
  return tokenizer.ok() ? *std::move(tokenizer) : nullptr;
}

TEST(TokenizerTest, CutsOutAddedTokensLeftmostLongestAnywhere) {
  const std::unique_ptr<BpeTokenizer> t = make(test_spec());
  ASSERT_NE(t, nullptr);
  EXPECT_THAT(*t->encode("hi<|a|>hi"), ElementsAre(256, kA, 256));
  EXPECT_THAT(*t->encode("<|a|>+<|a|>"), ElementsAre(kALonger, kA));
  // Special or not, inside a word or not.
  EXPECT_THAT(*t->encode("x<think>y"), ElementsAre('x', kThink, 'y'));
  // Half a token is plain text.
  EXPECT_THAT(*t->encode("<|a|"), ElementsAre('<', '|', 'a', '|'));
  EXPECT_THAT(*t->encode(" w"), ElementsAre(257));
}

// NFC runs over the whole text before added tokens are cut out, as in the
// reference's slow tokenizer: '>' + U+0338 composes to U+226F, so the text
// no longer contains "<|a|>".
TEST(TokenizerTest, NormalisesBeforeCuttingOutAddedTokens) {
  const std::unique_ptr<BpeTokenizer> t = make(test_spec());
  ASSERT_NE(t, nullptr);
  EXPECT_THAT(*t->encode("<|a|>\u0338"), ElementsAre('<', '|', 'a', '|', 0xE2, 0x89, 0xAF));
  EXPECT_THAT(*t->encode("e\u0301"), ElementsAre(0xC3, 0xA9));  // U+00E9
}

TEST(TokenizerTest, RefusesInvalidUtf8NamingTheOffset) {
  const std::unique_ptr<BpeTokenizer> t = make(test_spec());
  ASSERT_NE(t, nullptr);
  EXPECT_THAT(t->encode("hi \xFF there"),
              StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("byte offset 3"), HasSubstr("0xFF"))));
}

TEST(TokenizerTest, DecodesAddedTokensAndBytes) {
  const std::unique_ptr<BpeTokenizer> t = make(test_spec());
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(*t->decode({256, kA, 257, kThink}), "hi<|a|> w<think>");
  // Bytes of one character cut by an added token decode separately, each
  // bad run as U+FFFD (errors="replace").
  EXPECT_EQ(*t->decode({0xE4, kA, 0xB8, 0x80}), "\uFFFD<|a|>\uFFFD\uFFFD");
  EXPECT_EQ(*t->decode({0xE4, 0xB8, 0x80}), "\u4E00");
  EXPECT_THAT(t->decode({256, 999}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("id 999 at position 1")));
}

TEST(TokenizerTest, LooksUpTokensBothWays) {
  const std::unique_ptr<BpeTokenizer> t = make(test_spec());
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->token_to_id("<think>"), kThink);
  EXPECT_EQ(t->token_to_id("\u0120w"), 257);
  EXPECT_EQ(t->token_to_id("nope"), -1);
  EXPECT_EQ(*t->id_to_token(257), "\u0120w");
  EXPECT_EQ(*t->id_to_token(kA), "<|a|>");
  EXPECT_EQ(t->id_to_token(300), nullptr);
  EXPECT_EQ(t->pad_id(), kA);
  EXPECT_EQ(t->id_limit(), kThink + 1);
}

TEST(TokenizerTest, RefusesInconsistentSpecs) {
  TokenizerSpec unknown_pad = test_spec();
  unknown_pad.pad_token = "<pad>";
  EXPECT_THAT(BpeTokenizer::create(unknown_pad),
              StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("test spec"), HasSubstr("pad token '<pad>'"))));
  TokenizerSpec clash = test_spec();
  clash.added_tokens.push_back({'x', "<y>", true});
  EXPECT_THAT(BpeTokenizer::create(clash),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("which the vocabulary gives to 'x'")));
  TokenizerSpec twice = test_spec();
  twice.added_tokens.push_back({500, "<think>", false});
  EXPECT_THAT(BpeTokenizer::create(twice), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("appears twice")));
  TokenizerSpec empty = test_spec();
  empty.added_tokens.push_back({500, "", false});
  EXPECT_THAT(BpeTokenizer::create(empty), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty content")));
}

}  // namespace
}  // namespace diffusiond
