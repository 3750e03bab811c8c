// The T5 tokenizer's contract on a small Unigram model trained here (the
// library's trainer is deterministic): the added tokens and sentinels, the
// two `legacy` behaviours, </s> handling, decode, the folder's files and
// their errors. Parity with transformers on the reference fixtures is
// tests/unit/models/t5_parity_test.cc.
#include "core/text/sentencepiece_tokenizer.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/text/sentencepiece_files.h"
#include "core/text/sentencepiece_model.h"
#include "core/text/sentencepiece_trainer.h"
#include "core/text/token_batch.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int kExtraIds = 3;

// A model of at most 80 pieces: <pad> 0, </s> 1, <unk> 2, no byte fallback.
const std::string& tiny_model() {
  static const std::string* const model = [] {
    const std::vector<std::string> corpus = {
        "a red fox in the snow", "the quick brown fox jumps over the lazy dog", "hello world, hello there",
        "a cat on a chair and a dog under the table", "red and brown and white"};
    UnigramTrainingOptions options;
    options.vocab_size = 80;
    auto* out = new std::string();
    std::string error;
    EXPECT_TRUE(train_unigram_model(corpus, options, out, &error)) << error;
    return out;
  }();
  return *model;
}

int pieces() {
  std::string error;
  const std::unique_ptr<SentencePieceModel> model = SentencePieceModel::load(tiny_model(), false, &error);
  EXPECT_NE(model, nullptr) << error;
  return model != nullptr ? model->size() : 0;
}

// transformers' T5Tokenizer(spiece.model, extra_ids=3) as save_pretrained
// writes its added tokens.
SentencePieceTokenizerSpec spec(bool legacy) {
  SentencePieceTokenizerSpec s;
  s.source = "test";
  s.model = tiny_model();
  s.legacy = legacy;
  s.extra_ids = kExtraIds;
  s.added_tokens = {
      {0, "<pad>", true, false, false}, {1, "</s>", true, false, false}, {2, "<unk>", true, false, false}};
  for (int i = 0; i < kExtraIds; ++i) {
    s.added_tokens.push_back({pieces() - 1 + kExtraIds - i, absl::StrCat("<extra_id_", i, ">"), true, true, true});
  }
  return s;
}

std::unique_ptr<SentencePieceTokenizer> make(const SentencePieceTokenizerSpec& s) {
  absl::StatusOr<std::unique_ptr<SentencePieceTokenizer>> t = SentencePieceTokenizer::create(s);
  EXPECT_THAT(t, IsOk());
  return t.ok() ? *std::move(t) : nullptr;
}

// The model's own ids for `text` (dummy prefix on).
std::vector<int32_t> model_ids(const std::string& text, bool dummy_prefix = true) {
  std::string error;
  const std::unique_ptr<SentencePieceModel> model = SentencePieceModel::load(tiny_model(), !dummy_prefix, &error);
  std::vector<std::string> pieces;
  EXPECT_TRUE(model->encode(text, &pieces, &error)) << error;
  std::vector<int32_t> ids;
  for (const std::string& p : pieces) ids.push_back(model->piece_to_id(p));
  return ids;
}

std::vector<int32_t> concat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const std::vector<int32_t>& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(SentencePieceTokenizerTest, EncodesThroughTheModelAndAppendsEosOnce) {
  const std::unique_ptr<SentencePieceTokenizer> t = make(spec(true));
  ASSERT_NE(t, nullptr);
  absl::StatusOr<std::vector<int32_t>> ids = t->encode("hello red fox");
  ASSERT_THAT(ids, IsOk());
  EXPECT_EQ(*ids, model_ids("hello red fox"));
  EXPECT_EQ(t->special_tokens_added(), 1);
  std::vector<int32_t> wrapped = t->with_special_tokens(*ids);
  EXPECT_EQ(wrapped, concat({*ids, {1}}));
  EXPECT_EQ(t->with_special_tokens(wrapped), wrapped);  // already ends with </s>
  EXPECT_THAT(t->with_special_tokens({}), ElementsAre(1));
  EXPECT_THAT(*t->encode("</s>"), ElementsAre(1));
  EXPECT_EQ(t->pad_id(), 0);
  EXPECT_EQ(t->eos_id(), 1);
  EXPECT_EQ(t->id_limit(), pieces() + kExtraIds);
}

TEST(SentencePieceTokenizerTest, SentinelsFollowThePiecesInReverseOrder) {
  const std::unique_ptr<SentencePieceTokenizer> t = make(spec(true));
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->token_to_id("<extra_id_0>"), pieces() + kExtraIds - 1);
  EXPECT_EQ(t->token_to_id(absl::StrCat("<extra_id_", kExtraIds - 1, ">")), pieces());
  EXPECT_EQ(*t->id_to_token(pieces()), absl::StrCat("<extra_id_", kExtraIds - 1, ">"));
  EXPECT_EQ(t->token_to_id("<extra_id_99>"), -1);
  EXPECT_EQ(t->token_to_id("no such piece"), -1);
  EXPECT_EQ(t->id_to_token(t->id_limit()), nullptr);
}

// legacy=false shows what the sentinels' lstrip / rstrip do: a stretch
// after one starts without a space, so it gets no "▁"; after </s>, which
// strips nothing, it does.
TEST(SentencePieceTokenizerTest, LegacyFalsePrefixesOnlyWhereASpaceWas) {
  const std::unique_ptr<SentencePieceTokenizer> t = make(spec(false));
  ASSERT_NE(t, nullptr);
  EXPECT_FALSE(t->legacy());
  const int32_t sentinel = t->token_to_id("<extra_id_0>");
  EXPECT_EQ(*t->encode("red <extra_id_0> fox"), concat({model_ids("red"), {sentinel}, model_ids("fox", false)}));
  EXPECT_EQ(*t->encode("red </s> fox"), concat({model_ids("red"), {1}, model_ids("fox")}));
  // The legacy tokenizer prefixes every stretch.
  const std::unique_ptr<SentencePieceTokenizer> legacy = make(spec(true));
  EXPECT_EQ(*legacy->encode("red </s>fox"), concat({model_ids("red"), {1}, model_ids("fox")}));
  EXPECT_EQ(*t->encode("red </s>fox"), concat({model_ids("red"), {1}, model_ids("fox", false)}));
  // "▁" in the text is a space there.
  EXPECT_EQ(*t->encode("\xE2\x96\x81red"), *t->encode(" red"));
  EXPECT_THAT(*t->encode(""), ElementsAre());
}

TEST(SentencePieceTokenizerTest, DecodesAsTheReferenceDoes) {
  const std::unique_ptr<SentencePieceTokenizer> t = make(spec(true));
  ASSERT_NE(t, nullptr);
  const std::vector<int32_t> ids = t->with_special_tokens(*t->encode("hello <extra_id_0> red fox"));
  absl::StatusOr<std::string> skipped = t->decode(ids, SentencePieceDecodeOptions{true});
  ASSERT_THAT(skipped, IsOk());
  EXPECT_EQ(*skipped, "hello red fox");
  absl::StatusOr<std::string> kept = t->decode(ids);
  ASSERT_THAT(kept, IsOk());
  EXPECT_EQ(*kept, "hello <extra_id_0> red fox</s>");
  EXPECT_THAT(t->decode({5, t->id_limit()}), StatusIs(absl::StatusCode::kInvalidArgument,
                                                      HasSubstr("is not in the vocabulary of test")));
}

TEST(SentencePieceTokenizerTest, RefusesTextThatIsNotUtf8) {
  const std::unique_ptr<SentencePieceTokenizer> t = make(spec(true));
  ASSERT_NE(t, nullptr);
  EXPECT_THAT(t->encode("ok\xff"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("byte offset 2")));
}

TEST(SentencePieceTokenizerTest, TruncationKeepsTheEos) {
  const std::unique_ptr<SentencePieceTokenizer> t = make(spec(true));
  ASSERT_NE(t, nullptr);
  TokenizeOptions options;
  options.max_length = 4;
  options.pad_to_max_length = true;
  const std::vector<std::string> texts = {"the quick brown fox jumps over the lazy dog", "a"};
  absl::StatusOr<TokenBatch> batch = tokenize_batch(*t, texts, options);
  ASSERT_THAT(batch, IsOk());
  const std::vector<int32_t> full = *t->encode(texts[0]);
  EXPECT_THAT(std::vector<int32_t>(batch->ids.begin(), batch->ids.begin() + 4),
              ElementsAre(full[0], full[1], full[2], 1));
  const std::vector<int32_t> a = model_ids("a");
  ASSERT_LE(a.size(), 2u);
  EXPECT_EQ(batch->token_counts[1], static_cast<int64_t>(a.size()) + 1);
  EXPECT_EQ(batch->ids.back(), 0);  // padded with <pad>
}

TEST(SentencePieceTokenizerTest, RefusesAModelTheLibraryCannotRead) {
  SentencePieceTokenizerSpec s = spec(true);
  s.model = "not a model";
  EXPECT_THAT(SentencePieceTokenizer::create(s),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a usable SentencePiece model")));
  s.legacy = false;  // the wire-format edit fails first
  EXPECT_THAT(SentencePieceTokenizer::create(s),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("malformed protobuf")));
}

TEST(SentencePieceTokenizerTest, SentinelCountMustMatchExtraIds) {
  SentencePieceTokenizerSpec s = spec(true);
  s.additional_special_tokens = std::vector<std::string>{"<extra_id_0>"};
  EXPECT_THAT(SentencePieceTokenizer::create(s),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("extra_ids is 3")));
}

// A folder as save_pretrained writes it, minus what each test changes.
class SentencePieceFilesTest : public ::testing::Test {
 protected:
  void write_model() { dir_.write("spiece.model", tiny_model()); }
  TempDir dir_;
};

TEST_F(SentencePieceFilesTest, SpieceModelAloneGivesT5TokenizerDefaults) {
  write_model();
  absl::StatusOr<std::unique_ptr<SentencePieceTokenizer>> t = load_sentencepiece_tokenizer(dir_.path());
  ASSERT_THAT(t, IsOk());
  EXPECT_TRUE((*t)->legacy());
  EXPECT_EQ((*t)->token_to_id("<extra_id_0>"), pieces() + 99);
  EXPECT_EQ((*t)->token_to_id("<extra_id_99>"), pieces());
  EXPECT_EQ((*t)->id_limit(), pieces() + 100);
  EXPECT_EQ((*t)->pad_id(), 0);
  EXPECT_EQ((*t)->eos_id(), 1);
  // Sentinels strip the spaces beside them.
  EXPECT_EQ(*(*t)->encode("red <extra_id_0> fox"), concat({model_ids("red"), {pieces() + 99}, model_ids("fox")}));
}

TEST_F(SentencePieceFilesTest, ReadsTheConfigsFlagsAndAddedTokens) {
  write_model();
  const int s0 = pieces();
  dir_.write("tokenizer_config.json",
             absl::StrCat(R"({"legacy": false, "extra_ids": 1, "tokenizer_class": "T5Tokenizer",
                 "additional_special_tokens": ["<extra_id_0>"], "pad_token": "<pad>",
                 "added_tokens_decoder": {
                   "0": {"content": "<pad>", "special": true}, "1": {"content": "</s>", "special": true},
                   "2": {"content": "<unk>", "special": true},
                   ")", s0, R"(": {"content": "<extra_id_0>", "lstrip": true, "rstrip": true, "special": true}}})"));
  absl::StatusOr<std::unique_ptr<SentencePieceTokenizer>> t = load_sentencepiece_tokenizer(dir_.path());
  ASSERT_THAT(t, IsOk());
  EXPECT_FALSE((*t)->legacy());
  EXPECT_EQ((*t)->id_limit(), s0 + 1);
  EXPECT_EQ(*(*t)->encode("red <extra_id_0> fox"), concat({model_ids("red"), {s0}, model_ids("fox", false)}));
}

// Without added_tokens_decoder, added_tokens.json's tokens strip nothing and
// special_tokens_map.json names the special tokens.
TEST_F(SentencePieceFilesTest, ReadsTheOlderFiles) {
  write_model();
  const int s0 = pieces();
  dir_.write("tokenizer_config.json", R"({"extra_ids": 1})");
  dir_.write("special_tokens_map.json", R"({"pad_token": "</s>", "additional_special_tokens": ["<extra_id_0>"]})");
  dir_.write("added_tokens.json", absl::StrCat(R"({"<extra_id_0>": )", s0, "}"));
  absl::StatusOr<std::unique_ptr<SentencePieceTokenizer>> t = load_sentencepiece_tokenizer(dir_.path());
  ASSERT_THAT(t, IsOk());
  EXPECT_EQ((*t)->pad_id(), 1);
  EXPECT_EQ((*t)->token_to_id("<extra_id_0>"), s0);
  EXPECT_EQ(*(*t)->encode("red<extra_id_0>fox"), concat({model_ids("red"), {s0}, model_ids("fox")}));
}

TEST_F(SentencePieceFilesTest, NamesTheMissingModel) {
  EXPECT_THAT(load_sentencepiece_tokenizer(dir_.path()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("spiece.model: not found")));
  dir_.write("tokenizer.json", "{}");
  EXPECT_THAT(load_sentencepiece_tokenizer(dir_.path()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tokenizer.json: a T5 tokenizer is read from spiece.model")));
}

TEST_F(SentencePieceFilesTest, RefusesBadOrUnsupportedSettings) {
  write_model();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"legacy": "yes"})", "field 'legacy' is \"yes\", expected a boolean"},
      {R"({"tokenizer_class": "LlamaTokenizer"})", "field 'tokenizer_class'"},
      {R"({"sp_model_kwargs": {"enable_sampling": true}})", "field 'sp_model_kwargs'"},
      {R"({"extra_ids": -1})", "field 'extra_ids'"},
      {R"({"eos_token": 5})", "field 'eos_token'"},
      {R"({"added_tokens_decoder": {"x": {"content": "a"}}})", "the key is not an id"},
      {R"({"added_tokens_decoder": {"9": {"content": "a", "single_word": true}}})", "single_word"},
      {"[]", "expected a JSON object"},
  };
  for (const auto& [config, message] : cases) {
    dir_.write("tokenizer_config.json", config);
    EXPECT_THAT(load_sentencepiece_tokenizer(dir_.path()),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)))
        << config;
  }
}

TEST(SentencePieceModelTest, DummyPrefixEditNeedsWellFormedProtobuf) {
  std::string edited;
  EXPECT_TRUE(without_dummy_prefix(tiny_model(), &edited));
  EXPECT_NE(edited, tiny_model());
  EXPECT_FALSE(without_dummy_prefix("\xff\xff\xff", &edited));
  // An empty message gains a normaliser spec saying add_dummy_prefix false.
  EXPECT_TRUE(without_dummy_prefix("", &edited));
  EXPECT_EQ(edited, std::string("\x1a\x02\x18\x00", 4));
}

}  // namespace
}  // namespace diffusiond
