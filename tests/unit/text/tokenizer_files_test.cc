#include "core/text/tokenizer_files.h"

#include <string>

#include <nlohmann/json.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/byte_level_spec.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::byte_level_spec;
using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using json = nlohmann::json;

constexpr const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

json vocab_object() {
  json vocab = json::object();
  for (const auto& [token, id] : byte_level_spec({{"h", "i"}}).vocab) vocab[token] = id;  // "hi" = 256
  return vocab;
}

json added_token(int id, const std::string& content) {
  return {{"id", id}, {"content", content}, {"special", true}, {"lstrip", false},
          {"rstrip", false}, {"single_word", false}, {"normalized", false}};
}

// A tokenizer.json in the layout of Qwen's.
json tokenizer_json() {
  return {
      {"version", "1.0"},
      {"added_tokens", json::array({added_token(300, "<|endoftext|>")})},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         json::array({{{"type", "Split"}, {"pattern", {{"Regex", kQwen2Regex}}}, {"behavior", "Isolated"},
                       {"invert", false}},
                      {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false},
                       {"use_regex", false}}})}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"byte_fallback", false}, {"ignore_merges", false},
        {"continuing_subword_prefix", ""}, {"end_of_word_suffix", ""}, {"vocab", vocab_object()},
        {"merges", json::array({"h i"})}}},
  };
}

json tokenizer_config() {
  return {{"tokenizer_class", "Qwen2Tokenizer"},
          {"pad_token", "<|endoftext|>"},
          {"added_tokens_decoder", {{"300", added_token(300, "<|endoftext|>")}}}};
}

absl::StatusOr<std::vector<int32_t>> encode_with(const absl::StatusOr<TokenizerSpec>& spec, const std::string& text) {
  if (!spec.ok()) return spec.status();
  absl::StatusOr<std::unique_ptr<BpeTokenizer>> tokenizer = BpeTokenizer::create(*spec);
  if (!tokenizer.ok()) return tokenizer.status();
  return (*tokenizer)->encode(text);
}

TEST(TokenizerFilesTest, ReadsTokenizerJsonWithEitherMergeSpelling) {
  TempDir dir;
  json file = tokenizer_json();
  EXPECT_THAT(*encode_with(read_tokenizer_json(dir.write("a.json", file.dump())), "hi<|endoftext|>"),
              ElementsAre(256, 300));
  file["model"]["merges"] = json::array({json::array({"h", "i"})});
  EXPECT_THAT(*encode_with(read_tokenizer_json(dir.write("b.json", file.dump())), "hi"), ElementsAre(256));
}

TEST(TokenizerFilesTest, ReadsVocabMergesAndConfig) {
  TempDir dir;
  const std::string vocab = dir.write("vocab.json", vocab_object().dump());
  const std::string merges = dir.write("merges.txt", "#version: 0.2\nh i\n\n");
  const std::string config = dir.write("tokenizer_config.json", tokenizer_config().dump());
  absl::StatusOr<TokenizerSpec> spec = read_vocab_and_merges(vocab, merges, config);
  ASSERT_THAT(spec, IsOk());
  EXPECT_EQ(spec->pad_token, "<|endoftext|>");
  EXPECT_THAT(*encode_with(spec, "hi<|endoftext|>"), ElementsAre(256, 300));
}

TEST(TokenizerFilesTest, LoadsAFolderEitherWay) {
  TempDir dir;
  dir.write("tok/vocab.json", vocab_object().dump());
  dir.write("tok/merges.txt", "h i\n");
  dir.write("tok/tokenizer_config.json", tokenizer_config().dump());
  absl::StatusOr<std::unique_ptr<BpeTokenizer>> from_vocab = load_tokenizer(dir.path("tok"));
  ASSERT_THAT(from_vocab, IsOk());
  EXPECT_EQ((*from_vocab)->pad_id(), 300);
  // tokenizer.json wins when present; the pad token still comes from the config.
  json file = tokenizer_json();
  file["model"]["merges"] = json::array();
  dir.write("tok/tokenizer.json", file.dump());
  absl::StatusOr<std::unique_ptr<BpeTokenizer>> from_json = load_tokenizer(dir.path("tok"));
  ASSERT_THAT(from_json, IsOk());
  EXPECT_THAT(*(*from_json)->encode("hi"), ElementsAre('h', 'i'));
  EXPECT_EQ((*from_json)->pad_id(), 300);
  EXPECT_THAT((*from_json)->source(), HasSubstr("tokenizer.json"));
}

TEST(TokenizerFilesTest, UnreadableOrMalformedFilesAreNamed) {
  TempDir dir;
  EXPECT_THAT(read_tokenizer_json(dir.path("missing.json")),
              StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("missing.json"), HasSubstr("no such file"))));
  EXPECT_THAT(read_tokenizer_json(dir.write("bad.json", "{\"model\": ")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bad.json")));
  EXPECT_THAT(read_tokenizer_json(dir.write("list.json", "[]")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected a JSON object")));
  EXPECT_THAT(load_tokenizer(dir.path("no_such_folder")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("vocab.json")));
}

TEST(TokenizerFilesTest, MalformedEntriesAreNamed) {
  TempDir dir;
  const auto expect_error = [&](const json& file, const std::string& message) {
    EXPECT_THAT(read_tokenizer_json(dir.write("t.json", file.dump())),
                StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("t.json"), HasSubstr(message))))
        << message;
  };
  json file = tokenizer_json();
  file["model"]["merges"] = json::array({"h i x"});
  expect_error(file, "model.merges[0]");
  file = tokenizer_json();
  file["model"]["vocab"]["h"] = "seven";
  expect_error(file, "token 'h' has id \"seven\"");
  file = tokenizer_json();
  file["added_tokens"][0].erase("id");
  expect_error(file, "added_tokens[0] has no integer 'id'");
  file = tokenizer_json();
  file.erase("model");
  expect_error(file, "no 'model' object");
}

TEST(TokenizerFilesTest, UnsupportedSettingsAreRefused) {
  TempDir dir;
  const auto expect_error = [&](const json& file, const std::string& message) {
    EXPECT_THAT(read_tokenizer_json(dir.write("t.json", file.dump())),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)))
        << message;
  };
  json file = tokenizer_json();
  file["normalizer"] = {{"type", "NFKC"}};
  expect_error(file, "normalizer is {\"type\":\"NFKC\"}");
  file = tokenizer_json();
  file["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\s+";
  expect_error(file, "pre_tokenizer is not Qwen2's");
  file = tokenizer_json();
  file["pre_tokenizer"]["pretokenizers"][1]["use_regex"] = "yes";  // wrong type: no throw escapes
  expect_error(file, "unexpected pipeline settings");
  file = tokenizer_json();
  file["model"]["byte_fallback"] = true;
  expect_error(file, "model.byte_fallback is true");
  file = tokenizer_json();
  file["model"]["type"] = "WordPiece";
  expect_error(file, "model.type is \"WordPiece\"");
  file = tokenizer_json();
  file["added_tokens"][0]["lstrip"] = true;
  expect_error(file, "added token '<|endoftext|>' sets lstrip");
}

TEST(TokenizerFilesTest, VocabRouteErrorsNameFileAndLine) {
  TempDir dir;
  const std::string vocab = dir.write("vocab.json", vocab_object().dump());
  const std::string config = dir.write("tokenizer_config.json", tokenizer_config().dump());
  const std::string merges = dir.write("merges.txt", "#version: 0.2\nh i\n\nh i x\n");
  EXPECT_THAT(read_vocab_and_merges(vocab, merges, config),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("merges.txt"), HasSubstr("line 4 is 'h i x'"))));
  EXPECT_THAT(read_vocab_and_merges(vocab, dir.path("nope.txt"), config),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nope.txt")));
  json other = tokenizer_config();
  other["tokenizer_class"] = "LlamaTokenizer";
  EXPECT_THAT(read_vocab_and_merges(vocab, dir.write("m.txt", "h i\n"), dir.write("c.json", other.dump())),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tokenizer_class is \"LlamaTokenizer\"")));
  other = tokenizer_config();
  other["added_tokens_decoder"]["x"] = added_token(1, "<x>");
  EXPECT_THAT(read_vocab_and_merges(vocab, dir.write("m.txt", "h i\n"), dir.write("c.json", other.dump())),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("key 'x' is not an id")));
}

}  // namespace
}  // namespace diffusiond
