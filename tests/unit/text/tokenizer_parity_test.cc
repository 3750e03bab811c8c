// Parity of the Qwen tokenizer with transformers' Qwen2Tokenizer and of the
// Z-Image prompt path with diffusers' ZImagePipeline, on the reference
// fixture's tokens.json (ids, tokens and decode of every string, the
// chat-template renderings and the padded pipeline batch) and on the ids in
// io.safetensors that the text encoder was run on. Every count and
// length comes from the fixture, so another fixture of the same layout runs
// unchanged. The fixture folder: $DIFFUSIOND_QWEN3_FIXTURE, default
// fixtures_dir()/qwen3-tiny.
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/checkpoint/checkpoint.h"
#include "core/text/bpe_tokenizer.h"
#include "core/text/tokenizer_files.h"
#include "core/text/unicode.h"
#include "core/pipeline/z_image/z_image_prompt.h"
#include "core/util/file_text.h"
#include "core/util/json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using json = nlohmann::json;

std::string tokenizer_fixture() { return ::diffusiond::testing::fixture_folder("DIFFUSIOND_QWEN3_FIXTURE", "qwen3-tiny"); }

json read_tokens_json() {
  const std::string path = tokenizer_fixture() + "/tokens.json";
  absl::StatusOr<std::string> text = read_text_file(path, 64 << 20);
  EXPECT_THAT(text, IsOk()) << path;
  if (!text.ok()) return json();
  absl::StatusOr<json> parsed = parse_json_strict(*text, path);
  EXPECT_THAT(parsed, IsOk());
  return parsed.ok() ? *parsed : json();
}

// The two ways a model folder gives the tokenizer.
struct Route {
  const char* name;
  std::unique_ptr<BpeTokenizer> tokenizer;
};

std::vector<Route> load_both_routes() {
  const std::string dir = tokenizer_fixture() + "/tokenizer";
  std::vector<Route> routes;
  absl::StatusOr<TokenizerSpec> from_json = read_tokenizer_json(dir + "/tokenizer.json");
  absl::StatusOr<TokenizerSpec> from_vocab =
      read_vocab_and_merges(dir + "/vocab.json", dir + "/merges.txt", dir + "/tokenizer_config.json");
  EXPECT_THAT(from_json, IsOk());
  EXPECT_THAT(from_vocab, IsOk());
  if (!from_json.ok() || !from_vocab.ok()) return routes;
  for (auto& [name, spec] : {std::pair<const char*, TokenizerSpec*>{"tokenizer.json", &*from_json},
                             {"vocab.json+merges.txt", &*from_vocab}}) {
    absl::StatusOr<std::unique_ptr<BpeTokenizer>> tokenizer = BpeTokenizer::create(*spec);
    EXPECT_THAT(tokenizer, IsOk()) << name;
    if (tokenizer.ok()) routes.push_back({name, *std::move(tokenizer)});
  }
  return routes;
}

std::vector<int32_t> ids_of(const json& array) { return array.get<std::vector<int32_t>>(); }

// Returns the I64 tensor `name` of `file` as int32 values, and its shape.
std::vector<int32_t> read_i64(const Checkpoint& file, const std::string& name, std::vector<int64_t>* shape) {
  const TensorRecord* record = file.find(name);
  EXPECT_NE(record, nullptr) << name;
  if (record == nullptr) return {};
  EXPECT_EQ(record->dtype, DType::kI64) << name;
  std::vector<int64_t> values(static_cast<size_t>(record->numel));
  EXPECT_THAT(file.read(*record, reinterpret_cast<char*>(values.data())), IsOk());
  *shape = record->shape;
  return std::vector<int32_t>(values.begin(), values.end());
}

// Returns `values` as int32 (masks are bytes here, int64 in the file).
template <typename T>
std::vector<int32_t> as_ints(const std::vector<T>& values) {
  return std::vector<int32_t>(values.begin(), values.end());
}

TEST(TokenizerParity, EveryStringEncodesToTheReferenceIdsOnBothRoutes) {
  const json tokens = read_tokens_json();
  ASSERT_TRUE(tokens.contains("cases"));
  const std::vector<Route> routes = load_both_routes();
  ASSERT_EQ(routes.size(), 2u);
  ASSERT_FALSE(tokens["cases"].empty());
  for (const Route& route : routes) {
    for (const json& c : tokens["cases"]) {
      SCOPED_TRACE(std::string(route.name) + " / " + c["name"].get<std::string>());
      absl::StatusOr<std::vector<int32_t>> ids = route.tokenizer->encode(c["text"].get<std::string>());
      ASSERT_THAT(ids, IsOk());
      EXPECT_EQ(*ids, ids_of(c["ids"]));
      // The reference's convert_ids_to_tokens, token by token.
      const std::vector<std::string> expected_tokens = c["tokens"].get<std::vector<std::string>>();
      ASSERT_EQ(ids->size(), expected_tokens.size());
      for (size_t i = 0; i < ids->size(); ++i) {
        const std::string* token = route.tokenizer->id_to_token((*ids)[i]);
        ASSERT_NE(token, nullptr);
        EXPECT_EQ(*token, expected_tokens[i]) << "token " << i;
      }
    }
  }
}

TEST(TokenizerParity, DecodeGivesBackTheNormalisedText) {
  const json tokens = read_tokens_json();
  ASSERT_TRUE(tokens.contains("cases"));
  const std::vector<Route> routes = load_both_routes();
  ASSERT_EQ(routes.size(), 2u);
  for (const Route& route : routes) {
    for (const json& c : tokens["cases"]) {
      SCOPED_TRACE(std::string(route.name) + " / " + c["name"].get<std::string>());
      absl::StatusOr<std::string> text = route.tokenizer->decode(ids_of(c["ids"]));
      ASSERT_THAT(text, IsOk());
      absl::StatusOr<std::string> nfc = nfc_normalize(c["text"].get<std::string>(), "case");
      ASSERT_THAT(nfc, IsOk());
      EXPECT_EQ(*text, *nfc);
    }
  }
}

TEST(TokenizerParity, ChatTemplateRenderingsAndTheirIds) {
  const json tokens = read_tokens_json();
  ASSERT_TRUE(tokens.contains("chat_template_renderings"));
  ASSERT_FALSE(tokens["chat_template_renderings"].empty());
  const std::vector<Route> routes = load_both_routes();
  ASSERT_EQ(routes.size(), 2u);
  for (const json& r : tokens["chat_template_renderings"]) {
    const std::string prompt = r["prompt"].get<std::string>();
    SCOPED_TRACE(prompt);
    EXPECT_EQ(render_z_image_prompt(prompt), r["templated"].get<std::string>());
    EXPECT_EQ(render_qwen3_user_turn(prompt, /*enable_thinking=*/false),
              r["templated_enable_thinking_false"].get<std::string>());
    for (const Route& route : routes) {
      SCOPED_TRACE(route.name);
      absl::StatusOr<std::vector<int32_t>> ids = route.tokenizer->encode(render_z_image_prompt(prompt));
      ASSERT_THAT(ids, IsOk());
      EXPECT_EQ(*ids, ids_of(r["ids"]));
      ids = route.tokenizer->encode(render_qwen3_user_turn(prompt, false));
      ASSERT_THAT(ids, IsOk());
      EXPECT_EQ(*ids, ids_of(r["ids_enable_thinking_false"]));
    }
  }
}

TEST(TokenizerParity, PipelineBatchIsTruncatedAndPaddedLikeTheReference) {
  const json tokens = read_tokens_json();
  ASSERT_TRUE(tokens.contains("pipeline"));
  const json& pipeline = tokens["pipeline"];
  const std::vector<std::string> prompts = pipeline["prompts"].get<std::vector<std::string>>();
  const int64_t max_length = pipeline["max_sequence_length"].get<int64_t>();
  const auto expected_ids = pipeline["input_ids"].get<std::vector<std::vector<int32_t>>>();
  const auto expected_mask = pipeline["attention_mask"].get<std::vector<std::vector<int>>>();
  // The folder loader: tokenizer.json, pad token from tokenizer_config.json.
  absl::StatusOr<std::unique_ptr<BpeTokenizer>> tokenizer = load_tokenizer(tokenizer_fixture() + "/tokenizer");
  ASSERT_THAT(tokenizer, IsOk());
  absl::StatusOr<TokenBatch> batch = encode_z_image_prompts(**tokenizer, prompts, max_length);
  ASSERT_THAT(batch, IsOk());
  ASSERT_EQ(batch->batch, static_cast<int64_t>(expected_ids.size()));
  ASSERT_EQ(batch->length, max_length);
  for (int64_t r = 0; r < batch->batch; ++r) {
    SCOPED_TRACE("row " + std::to_string(r));
    const std::vector<int32_t> row(batch->ids.begin() + r * max_length,
                                   batch->ids.begin() + (r + 1) * max_length);
    const std::vector<int> mask(batch->attention_mask.begin() + r * max_length,
                                batch->attention_mask.begin() + (r + 1) * max_length);
    EXPECT_EQ(row, expected_ids[r]);
    EXPECT_EQ(mask, expected_mask[r]);
    int64_t ones = 0;
    for (const int m : expected_mask[r]) ones += m;
    EXPECT_EQ(batch->token_counts[r], ones);
  }
}

// The ids the reference text encoder ran on: the pipeline batch, the
// negative prompts ("" each, same padding) and each prompt alone, unpadded
// (the pipeline's prompts, then variant.json's single_prompt).
TEST(TokenizerParity, IdsMatchTheTextEncoderInputsInIoSafetensors) {
  const json tokens = read_tokens_json();
  ASSERT_TRUE(tokens.contains("pipeline"));
  absl::StatusOr<std::string> variant_text = read_text_file(tokenizer_fixture() + "/variant.json");
  ASSERT_THAT(variant_text, IsOk());
  absl::StatusOr<json> variant = parse_json_strict(*variant_text, "variant.json");
  ASSERT_THAT(variant, IsOk());
  absl::StatusOr<std::unique_ptr<Checkpoint>> io = Checkpoint::open(tokenizer_fixture() + "/io.safetensors");
  ASSERT_THAT(io, IsOk());
  absl::StatusOr<std::unique_ptr<BpeTokenizer>> tokenizer = load_tokenizer(tokenizer_fixture() + "/tokenizer");
  ASSERT_THAT(tokenizer, IsOk());

  std::vector<std::string> prompts = tokens["pipeline"]["prompts"].get<std::vector<std::string>>();
  for (const char* prefix : {"pipe", "neg"}) {
    SCOPED_TRACE(prefix);
    std::vector<int64_t> shape, mask_shape;
    const std::vector<int32_t> ids = read_i64(**io, std::string(prefix) + ".input_ids", &shape);
    const std::vector<int32_t> mask = read_i64(**io, std::string(prefix) + ".attention_mask", &mask_shape);
    ASSERT_EQ(shape.size(), 2u);
    ASSERT_EQ(mask_shape, shape);
    const std::vector<std::string> batch_prompts =
        std::string(prefix) == "pipe" ? prompts : std::vector<std::string>(static_cast<size_t>(shape[0]), "");
    ASSERT_EQ(static_cast<int64_t>(batch_prompts.size()), shape[0]);
    absl::StatusOr<TokenBatch> batch = encode_z_image_prompts(**tokenizer, batch_prompts, shape[1]);
    ASSERT_THAT(batch, IsOk());
    EXPECT_EQ(batch->ids, ids);
    EXPECT_EQ(as_ints(batch->attention_mask), mask);
  }

  prompts.push_back((*variant)["single_prompt"].get<std::string>());
  for (size_t i = 0; i < prompts.size(); ++i) {
    SCOPED_TRACE("single " + std::to_string(i));
    std::vector<int64_t> shape;
    const std::vector<int32_t> ids = read_i64(**io, "single.input_ids." + std::to_string(i), &shape);
    absl::StatusOr<std::vector<int32_t>> encoded = (*tokenizer)->encode(render_z_image_prompt(prompts[i]));
    ASSERT_THAT(encoded, IsOk());
    EXPECT_EQ(*encoded, ids);
  }
}

}  // namespace
}  // namespace diffusiond
