#include "core/pipeline/z_image/z_image_prompt.h"

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

TEST(ZImagePromptTest, RendersTheUserTurnAndGenerationPrompt) {
  EXPECT_EQ(render_z_image_prompt("a cat"), "<|im_start|>user\na cat<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(render_qwen3_user_turn("", /*enable_thinking=*/false),
            "<|im_start|>user\n<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST(ZImagePromptTest, PadsOnTheRightAndTruncatesOnTheRight) {
  absl::StatusOr<TokenBatch> batch = pad_or_truncate({{1, 2}, {3, 4, 5, 6, 7}, {8, 9, 10, 11}}, 4, 0);
  ASSERT_THAT(batch, IsOk());
  EXPECT_EQ(batch->batch, 3);
  EXPECT_EQ(batch->length, 4);
  EXPECT_THAT(batch->ids, ElementsAre(1, 2, 0, 0, 3, 4, 5, 6, 8, 9, 10, 11));
  EXPECT_THAT(batch->attention_mask, ElementsAre(1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
  EXPECT_THAT(batch->token_counts, ElementsAre(2, 4, 4));
  EXPECT_THAT(pad_or_truncate({{1}}, 0, 0), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_length is 0")));
  EXPECT_THAT(pad_or_truncate({{1}}, 2, -1), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("pad id")));
}

class ZImagePromptEncodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TokenizerSpec spec = byte_level_spec();
    spec.added_tokens = {{300, "<|endoftext|>", true}, {301, "<|im_start|>", true}, {302, "<|im_end|>", true}};
    spec.pad_token = "<|endoftext|>";
    absl::StatusOr<std::unique_ptr<BpeTokenizer>> tokenizer = BpeTokenizer::create(spec);
    ASSERT_THAT(tokenizer, IsOk());
    tokenizer_ = *std::move(tokenizer);
  }
  std::unique_ptr<BpeTokenizer> tokenizer_;
};

TEST_F(ZImagePromptEncodeTest, EncodesRenderedPromptsToAFixedLength) {
  // "<|im_start|>user\nab<|im_end|>\n<|im_start|>assistant\n": 1+5+2+1+1+1+10 = 21 ids.
  const std::vector<std::string> prompts = {"ab", "a much longer prompt than the other"};
  absl::StatusOr<TokenBatch> batch = encode_z_image_prompts(*tokenizer_, prompts, 24);
  ASSERT_THAT(batch, IsOk());
  ASSERT_EQ(batch->ids.size(), 48u);
  EXPECT_THAT(batch->token_counts, ElementsAre(21, 24));
  EXPECT_EQ(batch->ids[0], 301);
  EXPECT_EQ(batch->ids[8], 302);  // after "user\nab"
  EXPECT_EQ(batch->ids[20], '\n');
  EXPECT_EQ(batch->ids[21], 300);
  EXPECT_EQ(batch->ids[23], 300);
  EXPECT_EQ(batch->attention_mask[20], 1);
  EXPECT_EQ(batch->attention_mask[21], 0);
  // The long prompt is cut inside its own text: its template tail is gone.
  EXPECT_EQ(batch->ids[24 + 23], 'm');  // "user\n" + "a much longer pro" + 'm'
  EXPECT_EQ(batch->attention_mask[24 + 23], 1);
}

TEST_F(ZImagePromptEncodeTest, RefusesBadInput) {
  EXPECT_THAT(encode_z_image_prompts(*tokenizer_, {}, 8),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no prompts")));
  const std::vector<std::string> bad = {"fine", "ok\xC3("};
  EXPECT_THAT(encode_z_image_prompts(*tokenizer_, bad, 8),
              StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("prompt 1"), HasSubstr("byte offset 2"))));
  EXPECT_THAT(encode_z_image_prompts(*tokenizer_, {std::string("x")}, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_length")));
  TokenizerSpec no_pad = byte_level_spec();
  absl::StatusOr<std::unique_ptr<BpeTokenizer>> unpadded = BpeTokenizer::create(no_pad);
  ASSERT_THAT(unpadded, IsOk());
  EXPECT_THAT(encode_z_image_prompts(**unpadded, {std::string("x")}, 8),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no pad token")));
}

}  // namespace
}  // namespace diffusiond
