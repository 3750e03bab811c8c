// Unit tests of the CLIP tokenizer on a small synthetic vocabulary in CLIP's
// layout (256 byte symbols, the same with "</w>", merged tokens, then
// <|startoftext|> and <|endoftext|>): the text cleaning, the regex split, BPE
// with the word suffix, the special-token traps, decode, batching and the
// file readers. Parity with transformers on the reference fixture is in
// tests/unit/models/clip_parity_test.cc.
#include "core/text/clip_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/text/byte_level.h"
#include "core/text/clip_text_cleaning.h"
#include "core/text/clip_tokenizer_files.h"
#include "core/text/pretokenizer.h"
#include "core/text/token_batch.h"
#include "core/text/tokenizer_files.h"
#include "core/util/utf8.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;

// Merges in CLIP's spelling (ASCII letters are their own byte symbols).
const std::vector<std::pair<std::string, std::string>> kMerges = {
    {"h", "e"}, {"he", "l"}, {"hel", "l"}, {"hell", "o</w>"}, {"w", "o"}, {"wo", "r"}, {"wor", "l"}, {"worl", "d</w>"}};
constexpr int32_t kFirstMerged = 512;
constexpr int32_t kSot = 600, kEot = 601;

int32_t merged(const std::string& token) {
  for (size_t i = 0; i < kMerges.size(); ++i) {
    if (kMerges[i].first + kMerges[i].second == token) return kFirstMerged + static_cast<int32_t>(i);
  }
  ADD_FAILURE() << "no merged token " << token;
  return -1;
}
int32_t byte_id(char c) { return static_cast<uint8_t>(c); }
int32_t final_id(char c) { return 256 + static_cast<uint8_t>(c); }  // "c</w>"

// The vocabulary as vocab.json has it: byte symbol b has id b, with "</w>"
// 256 + b, merged tokens from 512, the two specials last.
std::vector<std::pair<std::string, int32_t>> vocab() {
  std::vector<std::pair<std::string, int32_t>> v;
  for (int b = 0; b < 256; ++b) {
    const std::string symbol = bytes_to_symbols(std::string(1, static_cast<char>(b)));
    v.emplace_back(symbol, b);
    v.emplace_back(symbol + "</w>", 256 + b);
  }
  for (size_t i = 0; i < kMerges.size(); ++i) {
    v.emplace_back(kMerges[i].first + kMerges[i].second, kFirstMerged + static_cast<int32_t>(i));
  }
  v.emplace_back("<|startoftext|>", kSot);
  v.emplace_back("<|endoftext|>", kEot);
  return v;
}

ClipTokenizerSpec clip_spec() {
  ClipTokenizerSpec spec;
  spec.bpe.source = "test spec";
  spec.bpe.vocab = vocab();
  spec.bpe.merges = kMerges;
  spec.bpe.added_tokens = {{kSot, "<|startoftext|>", true}, {kEot, "<|endoftext|>", true}};
  spec.bpe.pad_token = "<|endoftext|>";
  spec.model_max_length = 77;
  return spec;
}

std::unique_ptr<ClipTokenizer> make(const ClipTokenizerSpec& spec = clip_spec()) {
  absl::StatusOr<std::unique_ptr<ClipTokenizer>> tokenizer = ClipTokenizer::create(spec);
  EXPECT_THAT(tokenizer, IsOk());
  return tokenizer.ok() ? *std::move(tokenizer) : nullptr;
}

TEST(ClipTextCleaningTest, CleansAsBertsBasicTokenizer) {
  EXPECT_EQ(*clean_clip_text("  Hello\tWORLD\r\n  again  "), "hello world again");
  EXPECT_EQ(*clean_clip_text(std::string("nul\0bell\x07"
                                         "esc\x1b"
                                         "end",
                                         16)),
            "nulbellescend");
  EXPECT_EQ(*clean_clip_text("zero\u200Bwidth, no\u00A0break, ideo\u3000space, line\u2028sep"),
            "zerowidth, no break, ideo space, line sep");
  // Ideographs stand alone; kana and Hangul do not.
  EXPECT_EQ(*clean_clip_text("猫が坐る안녕"), "猫 が 坐 る안녕");
  // NFC, lower case, no NFKC and no accent stripping.
  EXPECT_EQ(*clean_clip_text("E\u0301TE\u0301 ＡＢＣ"), "été ａｂｃ");
  // Python's str.lower(): a final sigma, and İ to i + combining dot.
  EXPECT_EQ(*clean_clip_text("ΟΔΟΣ İ"), "οδος i\u0307");
  EXPECT_EQ(*clean_clip_text(" \t\n "), "");
  EXPECT_THAT(clean_clip_text("ok\xff"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("byte offset 2")));
}

TEST(ClipPiecesTest, SplitsAsClipsRegex) {
  EXPECT_THAT(
      split_clip_pieces("i'm sure, they'd've 2024x!? <|endoftext|>a"),
      ElementsAre("i", "'m", "sure", ",", "they", "'d", "'ve", "2", "0", "2", "4", "x", "!?", "<|endoftext|>", "a"));
  // The specials only where the regex tries them first: after a symbol the
  // symbol run takes "<|".
  EXPECT_THAT(split_clip_pieces("!<|startoftext|>"), ElementsAre("!<|", "startoftext", "|>"));
  // IGNORECASE as the regex module has it: U+017F matches 's'.
  EXPECT_THAT(split_clip_pieces("it'\u017F"), ElementsAre("it", "'\u017F"));
  EXPECT_THAT(split_clip_pieces("a-b_c ½①"), ElementsAre("a", "-", "b", "_", "c", "½", "①"));
}

TEST(ClipTokenizerTest, MergesWithTheEndOfWordSuffix) {
  const std::unique_ptr<ClipTokenizer> t = make();
  ASSERT_NE(t, nullptr);
  EXPECT_THAT(*t->encode("Hello WORLD"), ElementsAre(merged("hello</w>"), merged("world</w>")));
  // "hel" + "l" merges inside a word only: the word-final l is "l</w>".
  EXPECT_THAT(*t->encode("hell"), ElementsAre(merged("hel"), final_id('l')));
  EXPECT_THAT(*t->encode("a"), ElementsAre(final_id('a')));
  EXPECT_THAT(*t->encode("ab"), ElementsAre(byte_id('a'), final_id('b')));
  EXPECT_THAT(*t->encode(""), ElementsAre());
}

TEST(ClipTokenizerTest, WrapsInStartAndEndOfTextAndPadsWithEndOfText) {
  const std::unique_ptr<ClipTokenizer> t = make();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->special_tokens_added(), 2);
  EXPECT_EQ(t->bos_id(), kSot);
  EXPECT_EQ(t->eos_id(), kEot);
  EXPECT_EQ(t->pad_id(), kEot);
  EXPECT_EQ(t->id_limit(), kEot + 1);
  EXPECT_EQ(t->model_max_length(), 77);
  EXPECT_THAT(t->with_special_tokens({merged("hello</w>")}), ElementsAre(kSot, merged("hello</w>"), kEot));
}

TEST(ClipTokenizerTest, SpecialTokensInTheText) {
  const std::unique_ptr<ClipTokenizer> t = make();
  ASSERT_NE(t, nullptr);
  // Cut out exactly, even inside a word.
  EXPECT_THAT(*t->encode("<|startoftext|>hello<|endoftext|>a"),
              ElementsAre(kSot, merged("hello</w>"), kEot, final_id('a')));
  // Not cut out in upper case, but lower-cased by the cleaning, matched by
  // the regex's first alternative and mapped to itself as the reference's
  // BPE cache does.
  EXPECT_THAT(*t->encode("<|STARTOFTEXT|> hello"), ElementsAre(kSot, merged("hello</w>")));
  EXPECT_THAT(*t->encode("!<|STARTOFTEXT|>"), Not(Contains(kSot)));
}

TEST(ClipTokenizerTest, RefusesInvalidUtf8NamingTheOffset) {
  const std::unique_ptr<ClipTokenizer> t = make();
  ASSERT_NE(t, nullptr);
  EXPECT_THAT(t->encode("hel\xff"),
              StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("byte offset 3"), HasSubstr("0xFF"))));
}

TEST(ClipTokenizerTest, DecodesAsTheReferenceWithSpecialTokens) {
  const std::unique_ptr<ClipTokenizer> t = make();
  ASSERT_NE(t, nullptr);
  const std::vector<int32_t> ids = *t->encode("Hello,  world é!");
  EXPECT_EQ(*t->decode(ids), "hello , world é !");
  EXPECT_EQ(*t->decode(t->with_special_tokens(ids)), "<|startoftext|>hello , world é ! <|endoftext|>");
  // A lone continuation byte decodes to U+FFFD.
  EXPECT_EQ(*t->decode({0xA9}), "\uFFFD");
  EXPECT_THAT(t->decode({kSot, 999}), StatusIs(absl::StatusCode::kInvalidArgument,
                                               AllOf(HasSubstr("id 999 at position 1"), HasSubstr("test spec"))));

  ClipTokenizerSpec spec = clip_spec();
  spec.clean_up_tokenization_spaces = true;
  const std::unique_ptr<ClipTokenizer> cleaning = make(spec);
  ASSERT_NE(cleaning, nullptr);
  EXPECT_EQ(*cleaning->decode(ids), "hello, world é!");
}

TEST(ClipTokenizerTest, CreateNamesWhatTheFilesLack) {
  ClipTokenizerSpec spec = clip_spec();
  spec.bpe.vocab.erase(std::remove_if(spec.bpe.vocab.begin(), spec.bpe.vocab.end(),
                                      [](const auto& entry) { return entry.first == "q</w>"; }),
                       spec.bpe.vocab.end());
  EXPECT_THAT(ClipTokenizer::create(spec),
              StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("test spec"), HasSubstr("'q</w>'"))));
  spec = clip_spec();
  spec.bos_token = "<s>";
  EXPECT_THAT(ClipTokenizer::create(spec),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bos token '<s>' is neither")));
  spec = clip_spec();
  spec.bpe.merges.push_back({"x", "y"});
  EXPECT_THAT(ClipTokenizer::create(spec), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'xy' is not in")));
}

TEST(ClipTokenizerTest, BatchesTruncateTheTextAndKeepTheWrapping) {
  const std::unique_ptr<ClipTokenizer> t = make();
  ASSERT_NE(t, nullptr);
  TokenizeOptions options;
  options.max_length = 4;
  options.pad_to_max_length = true;
  const std::vector<std::string> texts = {"hello world hello", "a"};
  absl::StatusOr<TokenBatch> batch = tokenize_batch(*t, texts, options);
  ASSERT_THAT(batch, IsOk());
  EXPECT_THAT(batch->ids, ElementsAre(kSot, merged("hello</w>"), merged("world</w>"), kEot,  //
                                      kSot, final_id('a'), kEot, kEot));
  EXPECT_THAT(batch->attention_mask, ElementsAre(1, 1, 1, 1, 1, 1, 1, 0));
}

// Writes a tokenizer folder in CLIPTokenizer.save_pretrained's layout.
void write_folder(const TempDir& dir, const std::string& merges_header = "#version: 0.2\n") {
  json v = json::object();
  for (const auto& [token, id] : vocab()) v[token] = id;
  dir.write("tok/vocab.json", v.dump());
  std::string merges = merges_header;
  for (const auto& [left, right] : kMerges) merges += left + " " + right + "\n";
  dir.write("tok/merges.txt", merges);
  dir.write("tok/tokenizer_config.json",
            json{{"tokenizer_class", "CLIPTokenizer"},
                 {"model_max_length", 77},
                 {"bos_token", "<|startoftext|>"},
                 {"eos_token", "<|endoftext|>"},
                 {"pad_token", "<|endoftext|>"},
                 {"unk_token", "<|endoftext|>"},
                 {"added_tokens_decoder",
                  {{"600", {{"content", "<|startoftext|>"}, {"special", true}, {"lstrip", false}}},
                   {"601", {{"content", "<|endoftext|>"}, {"special", true}, {"rstrip", false}}}}}}
                .dump());
}

TEST(ClipTokenizerFilesTest, ReadsVocabMergesAndConfig) {
  TempDir dir;
  write_folder(dir);
  absl::StatusOr<std::unique_ptr<ClipTokenizer>> t = load_clip_tokenizer(dir.path("tok"));
  ASSERT_THAT(t, IsOk());
  EXPECT_THAT(*(*t)->encode("<|startoftext|>Hello"), ElementsAre(kSot, merged("hello</w>")));
  EXPECT_EQ((*t)->model_max_length(), 77);
  EXPECT_EQ((*t)->pad_id(), kEot);
  EXPECT_THAT((*t)->source(), HasSubstr("vocab.json"));
}

TEST(ClipTokenizerFilesTest, DefaultsWithoutConfigAndSpecialTokensFromTheVocabulary) {
  TempDir dir;
  write_folder(dir);
  std::filesystem::remove(dir.path("tok/tokenizer_config.json"));
  absl::StatusOr<std::unique_ptr<ClipTokenizer>> t = load_clip_tokenizer(dir.path("tok"));
  ASSERT_THAT(t, IsOk());
  // CLIPTokenizer's defaults name the specials; the vocabulary gives ids,
  // and they are cut out of text like added tokens.
  EXPECT_EQ((*t)->bos_id(), kSot);
  EXPECT_EQ((*t)->pad_id(), kEot);
  EXPECT_EQ((*t)->model_max_length(), 0);
  EXPECT_THAT(*(*t)->encode("a<|endoftext|>"), ElementsAre(final_id('a'), kEot));
  // special_tokens_map.json overrides the defaults.
  dir.write("tok/special_tokens_map.json", json{{"pad_token", {{"content", "<|startoftext|>"}}}}.dump());
  t = load_clip_tokenizer(dir.path("tok"));
  ASSERT_THAT(t, IsOk());
  EXPECT_EQ((*t)->pad_id(), kSot);
}

TEST(ClipTokenizerFilesTest, DropsTheFirstMergesLineWhateverItHolds) {
  TempDir dir;
  write_folder(dir, /*merges_header=*/"");  // the first merge, "h e", is lost as in the reference
  absl::StatusOr<std::unique_ptr<ClipTokenizer>> t = load_clip_tokenizer(dir.path("tok"));
  ASSERT_THAT(t, IsOk());
  EXPECT_THAT(*(*t)->encode("hello"), ElementsAre('h', 'e', 'l', 'l', final_id('o')));

  const std::string path = dir.write("m.txt", "\n#version: 0.2\na b\n\nc d\ne f\n");
  MergesTxtFormat clip;
  clip.always_skip_first_line = true;
  clip.max_lines = 3;  // "a b", the blank line, "c d"
  EXPECT_THAT(*read_merges_txt(path, clip), ElementsAre(std::make_pair(std::string("a"), std::string("b")),
                                                        std::make_pair(std::string("c"), std::string("d"))));
}

TEST(ClipTokenizerFilesTest, ReadsTokenizerJsonWithTheWordSuffix) {
  TempDir dir;
  json v = json::object();
  for (const auto& [token, id] : vocab()) v[token] = id;
  json merges = json::array();
  for (const auto& [left, right] : kMerges) merges.push_back(left + " " + right);
  json file = {{"model", {{"type", "BPE"}, {"end_of_word_suffix", "</w>"}, {"vocab", v}, {"merges", merges}}},
               {"added_tokens", json::array({{{"id", kSot}, {"content", "<|startoftext|>"}, {"special", true}},
                                             {{"id", kEot}, {"content", "<|endoftext|>"}, {"special", true}}})}};
  dir.write("tok/tokenizer.json", file.dump());
  absl::StatusOr<std::unique_ptr<ClipTokenizer>> t = load_clip_tokenizer(dir.path("tok"));
  ASSERT_THAT(t, IsOk());
  EXPECT_THAT(*(*t)->encode("Hello World"), ElementsAre(merged("hello</w>"), merged("world</w>")));

  file["model"].erase("end_of_word_suffix");
  dir.write("tok/tokenizer.json", file.dump());
  EXPECT_THAT(load_clip_tokenizer(dir.path("tok")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("tokenizer.json"), HasSubstr("end_of_word_suffix is \"\"; expected \"</w>\""))));
}

TEST(ClipTokenizerFilesTest, ErrorsNameTheFile) {
  TempDir dir;
  write_folder(dir);
  dir.write("tok/tokenizer_config.json", json{{"tokenizer_class", "T5Tokenizer"}}.dump());
  EXPECT_THAT(load_clip_tokenizer(dir.path("tok")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("tokenizer_config.json"), HasSubstr("tokenizer_class is \"T5Tokenizer\""))));
  dir.write("tok/tokenizer_config.json", json{{"model_max_length", "long"}}.dump());
  EXPECT_THAT(load_clip_tokenizer(dir.path("tok")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("model_max_length is \"long\"")));
  std::filesystem::remove(dir.path("tok/tokenizer_config.json"));
  dir.write("tok/merges.txt", "#version: 0.2\nh e x\n");
  EXPECT_THAT(load_clip_tokenizer(dir.path("tok")),
              StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("merges.txt"), HasSubstr("line 2"))));
  EXPECT_THAT(load_clip_tokenizer(dir.path("nowhere")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("vocab.json")));
}

}  // namespace
}  // namespace diffusiond
