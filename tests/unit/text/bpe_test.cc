#include "core/text/bpe.h"

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
using ::diffusiond::testing::symbols;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<BpeModel> model_of(const TokenizerSpec& spec) {
  return BpeModel::create(spec.vocab, spec.merges, spec.source);
}

TEST(BpeModelTest, WithoutMergesEveryByteIsAToken) {
  absl::StatusOr<BpeModel> bpe = model_of(byte_level_spec());
  ASSERT_THAT(bpe, IsOk());
  EXPECT_THAT(bpe->encode_piece(" a\n"), ElementsAre(' ', 'a', '\n'));
  EXPECT_THAT(bpe->encode_piece("\xE4\xB8\x80"), ElementsAre(0xE4, 0xB8, 0x80));
  EXPECT_TRUE(bpe->encode_piece("").empty());
  EXPECT_EQ(bpe->id_limit(), 256);
  EXPECT_EQ(*bpe->token(' '), "\u0120");
}

TEST(BpeModelTest, MergesByRankLeftToRightWithoutOverlap) {
  // 256 = "aa" (rank 0), 257 = "aa"+"a" (rank 1), 258 = "aa"+"aa" (rank 2).
  absl::StatusOr<BpeModel> bpe = model_of(byte_level_spec({{"a", "a"}, {"aa", "a"}, {"aa", "aa"}}));
  ASSERT_THAT(bpe, IsOk());
  EXPECT_THAT(bpe->encode_piece("aaa"), ElementsAre(257));      // aa a -> aaa
  EXPECT_THAT(bpe->encode_piece("aaaa"), ElementsAre(258));     // aa aa -> aaaa (rank 2)
  EXPECT_THAT(bpe->encode_piece("aaaaa"), ElementsAre(256, 257));  // aa aa a: rank 1 beats rank 2
}

// The reference merges every occurrence of the best pair before it looks at
// a pair those merges formed, even a better-ranked one: "abab" is "ab ab",
// where a best-first queue would make "aba b".
TEST(BpeModelTest, AppliesOneRankToTheWholeWordBeforeTheNext) {
  TokenizerSpec spec = byte_level_spec({{"a", "b"}});
  spec.vocab.emplace_back(symbols("aba"), 300);
  spec.merges.insert(spec.merges.begin(), {symbols("ab"), symbols("a")});  // rank 0
  absl::StatusOr<BpeModel> bpe = model_of(spec);
  ASSERT_THAT(bpe, IsOk());
  EXPECT_THAT(bpe->encode_piece("abab"), ElementsAre(256, 256));
  EXPECT_THAT(bpe->encode_piece("aba"), ElementsAre(300));
}

TEST(BpeModelTest, RejectsInconsistentVocabularies) {
  TokenizerSpec missing_byte = byte_level_spec();
  missing_byte.vocab.erase(missing_byte.vocab.begin() + ' ');
  EXPECT_THAT(model_of(missing_byte),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'\u0120' (byte 32) is not in the vocabulary")));

  TokenizerSpec unknown_part = byte_level_spec();
  unknown_part.merges.emplace_back(symbols("ab"), symbols("c"));
  EXPECT_THAT(model_of(unknown_part),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("merge 0 'ab c': 'ab' is not in the vocabulary")));

  TokenizerSpec no_result = byte_level_spec();
  no_result.merges.emplace_back("a", "b");
  EXPECT_THAT(model_of(no_result), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'ab' is not in")));

  TokenizerSpec repeated = byte_level_spec({{"a", "b"}});
  repeated.merges.push_back(repeated.merges[0]);
  EXPECT_THAT(model_of(repeated), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("repeats")));

  TokenizerSpec shared_id = byte_level_spec();
  shared_id.vocab.emplace_back("xyz", 5);
  EXPECT_THAT(model_of(shared_id), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("id 5 is given to both")));

  TokenizerSpec negative = byte_level_spec();
  negative.vocab.emplace_back("xyz", -2);
  EXPECT_THAT(model_of(negative), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("negative id -2")));
}

}  // namespace
}  // namespace diffusiond
