// The T5 encoder's contract without a reference fixture: config parsing and
// its refusals, the key map and shape inference, the parameter table, the
// activation estimate, the relu variant, and a random model written by
// tools/random_models/t5_random.h loaded with its trained tokenizer from a
// pipeline layout. Parity with upstream is t5_parity_test.cc.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/models/model_family.h"
#include "core/models/t5/t5_attention.h"
#include "core/models/t5/t5_config.h"
#include "core/models/t5/t5_model.h"
#include "core/models/t5/t5_params.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/loaded_model.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tools/random_models/t5_random.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::load_test_model;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::testing::HasSubstr;

constexpr char kMinimal[] = R"({"model_type": "t5", "architectures": ["T5EncoderModel"], "d_model": 32,
    "d_kv": 8, "num_heads": 2, "d_ff": 48, "num_layers": 2, "vocab_size": 400, "feed_forward_proj": "gated-gelu"})";

// kMinimal with the fields of `fields_json` (an object) set.
std::string with(absl::string_view fields_json) {
  nlohmann::json config = nlohmann::json::parse(kMinimal);
  config.update(nlohmann::json::parse(absl::StrCat("{", fields_json, "}")));
  return config.dump();
}

TEST(T5ConfigTest, ReadsTransformersConfigAndUmt5Defaults) {
  absl::StatusOr<T5Config> c = parse_t5_config(absl::string_view(kMinimal), "config.json");
  ASSERT_THAT(c, IsOk());
  EXPECT_FALSE(c->umt5);
  EXPECT_EQ(c->inner_dim(), 16);
  EXPECT_EQ(c->feed_forward, T5FeedForward::kGatedGelu);
  EXPECT_EQ(c->relative_attention_num_buckets, 32);
  EXPECT_TRUE(c->has_relative_bias(0));
  EXPECT_FALSE(c->has_relative_bias(1));
  absl::StatusOr<T5Config> u = parse_t5_config(absl::string_view(R"({"model_type": "umt5"})"), "config.json");
  ASSERT_THAT(u, IsOk());
  EXPECT_TRUE(u->umt5);
  EXPECT_TRUE(u->has_relative_bias(5));
  EXPECT_EQ(u->feed_forward, T5FeedForward::kGatedGelu);
  EXPECT_EQ(u->vocab_size, 250112);
  // ComfyUI spells the tanh GELU as torch does.
  EXPECT_THAT(parse_t5_config(absl::string_view(with(R"("dense_act_fn": "gelu_pytorch_tanh", "is_gated_act": true)")),
                              "config.json"),
              IsOk());
}

TEST(T5ConfigTest, NamesTheFieldItRefuses) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"model_type": "bert"})", "field 'model_type' is \"bert\""},
      {with(R"("architectures": ["T5ForQuestionAnswering"])"), "field 'architectures'"},
      {with(R"("feed_forward_proj": "gated-silu")"), "field 'feed_forward_proj' is \"gated-silu\""},
      {with(R"("dense_act_fn": "relu")"), "field 'dense_act_fn' is \"relu\""},
      {with(R"("is_gated_act": false)"), "field 'is_gated_act' is false"},
      {with(R"("d_kv": 0)"), "d_kv is 0, expected a positive integer"},
      {with(R"("num_layers": "3")"), "field 'num_layers' is \"3\", expected an integer"},
      {with(R"("relative_attention_num_buckets": 2)"), "relative_attention_num_buckets is 2, expected at least 4"},
      {with(R"("relative_attention_max_distance": 8)"), "relative_attention_max_distance is 8, expected more than"},
      {with(R"("layer_norm_epsilon": 0)"), "layer_norm_epsilon is 0"},
  };
  for (const auto& [json, message] : cases) {
    EXPECT_THAT(parse_t5_config(absl::string_view(json), "config.json"),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)))
        << json;
  }
}

TEST(T5ParamsTest, MapsCheckpointNamesToTransformersNames) {
  EXPECT_EQ(t5_canonical_name("shared.weight", true), "shared.weight");
  EXPECT_EQ(t5_canonical_name("encoder.embed_tokens.weight", true), std::nullopt);
  EXPECT_EQ(t5_canonical_name("encoder.embed_tokens.weight", false), "shared.weight");
  EXPECT_EQ(t5_canonical_name("embed_tokens.weight", false), "shared.weight");
  EXPECT_EQ(t5_canonical_name("block.3.layer.1.DenseReluDense.wo.weight", true),
            "encoder.block.3.layer.1.DenseReluDense.wo.weight");
  EXPECT_EQ(t5_canonical_name("final_layer_norm.weight", true), "encoder.final_layer_norm.weight");
  EXPECT_EQ(t5_canonical_name("decoder.block.0.layer.0.SelfAttention.q.weight", true), std::nullopt);
  EXPECT_EQ(t5_canonical_name("lm_head.weight", true), std::nullopt);
}

TEST(T5ParamsTest, TableHasBiasTablesWhereTheVariantDoes) {
  absl::StatusOr<T5Config> c = parse_t5_config(absl::string_view(kMinimal), "config.json");
  ASSERT_THAT(c, IsOk());
  const auto count_bias = [](const std::vector<ParamSpec>& table) {
    int n = 0;
    for (const ParamSpec& p : table) n += absl::StrContains(p.name, "relative_attention_bias");
    return n;
  };
  EXPECT_EQ(count_bias(t5_parameter_table(*c)), 1);
  c->umt5 = true;
  EXPECT_EQ(count_bias(t5_parameter_table(*c)), 2);
  c->feed_forward = T5FeedForward::kRelu;
  bool has_wi = false;
  for (const ParamSpec& p : t5_parameter_table(*c)) {
    has_wi |= p.name == "encoder.block.1.layer.1.DenseReluDense.wi.weight";
  }
  EXPECT_TRUE(has_wi);
}

TEST(T5ParamsTest, InfersTheConfigFromShapes) {
  absl::StatusOr<T5Config> c = parse_t5_config(absl::string_view(kMinimal), "config.json");
  ASSERT_THAT(c, IsOk());
  c->umt5 = true;
  std::map<std::string, std::vector<int64_t>, std::less<>> shapes;
  std::vector<std::string> names;
  for (const ParamSpec& p : t5_parameter_table(*c)) {
    shapes[p.name] = p.shape;
    names.push_back(p.name);
  }
  const T5ShapeLookup lookup = [&](absl::string_view name) -> std::optional<std::vector<int64_t>> {
    const auto it = shapes.find(name);
    if (it == shapes.end()) return std::nullopt;
    return it->second;
  };
  absl::StatusOr<T5Config> inferred = infer_t5_config(lookup, names, "file");
  ASSERT_THAT(inferred, IsOk());
  EXPECT_TRUE(inferred->umt5);
  EXPECT_EQ(inferred->d_kv, 8);
  EXPECT_EQ(inferred->num_heads, 2);
  EXPECT_EQ(inferred->d_ff, 48);
  EXPECT_EQ(inferred->num_layers, 2);
  shapes.erase("encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight");
  EXPECT_THAT(infer_t5_config(lookup, names, "file"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("file: cannot infer the T5 config")));
}

TEST(T5AttentionTest, BucketsAreSymmetricWithKeysAfterTheQueryInTheUpperHalf) {
  const torch::Tensor buckets = t5_position_buckets(3, 3, 32, 128, torch::kCPU);
  EXPECT_EQ(buckets[0][0].item<int64_t>(), 0);
  EXPECT_EQ(buckets[0][1].item<int64_t>(), 17);  // one key after: 16 + 1
  EXPECT_EQ(buckets[1][0].item<int64_t>(), 1);   // one key before
  // Far away, both directions end in their half's last bucket.
  const torch::Tensor far = t5_relative_position_bucket(torch::tensor({-100000, 100000}, torch::kInt64), 32, 128);
  EXPECT_EQ(far[0].item<int64_t>(), 15);
  EXPECT_EQ(far[1].item<int64_t>(), 31);
}

// A random model and tokenizer in a FLUX pipeline's layout, as the demo
// writes them.
class T5RandomModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = demo_t5_config();
    ASSERT_THAT(write_random_t5_encoder(tmp_.path("text_encoder_2"), config_, 7), IsOk());
    ASSERT_THAT(write_t5_tokenizer(tmp_.path("tokenizer_2"), T5TokenizerFiles()), IsOk());
  }
  TempDir tmp_;
  T5Config config_;
};

TEST_F(T5RandomModelTest, LoadsWithItsTokenizerAndEncodes) {
  testing::LoadedModel l = load_test_model(tmp_.path("text_encoder_2"), {});
  const T5Encoder* model = l.get<T5Encoder>();
  ASSERT_NE(model, nullptr);
  ASSERT_NE(model->tokenizer(), nullptr);
  EXPECT_LE(model->tokenizer()->id_limit(), config_.vocab_size);
  TextEncoding request;
  request.text = "a red fox in the snow <extra_id_0>";
  request.max_tokens = 16;
  request.pad_to_max_tokens = true;
  request.attend_to_padding = true;
  absl::StatusOr<EncodedText> encoded = model->encode(request);
  ASSERT_THAT(encoded, IsOk());
  EXPECT_EQ(encoded->hidden_states.sizes(), (std::vector<int64_t>{16, config_.d_model}));
  EXPECT_TRUE(torch::isfinite(encoded->hidden_states).all().item<bool>());
  EXPECT_GT(encoded->tokens, 2);
  EXPECT_LT(encoded->tokens, 16);
  EXPECT_EQ(encoded->attention_mask.sum().item<int64_t>(), encoded->tokens);
  // Padding changes the text rows only when it is attended to.
  request.attend_to_padding = false;
  absl::StatusOr<EncodedText> masked = model->encode(request);
  request.pad_to_max_tokens = false;
  absl::StatusOr<EncodedText> alone = model->encode(request);
  ASSERT_THAT(masked, IsOk());
  ASSERT_THAT(alone, IsOk());
  const int64_t n = alone->tokens;
  EXPECT_TRUE(torch::allclose(masked->hidden_states.narrow(0, 0, n), alone->hidden_states, 1e-5, 1e-5));
  EXPECT_FALSE(torch::allclose(encoded->hidden_states.narrow(0, 0, n), alone->hidden_states, 1e-5, 1e-5));
  request.hidden_layer = -(config_.num_layers + 2);
  EXPECT_THAT(model->encode(request), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("out of range")));
}

TEST_F(T5RandomModelTest, ActivationEstimateCoversTheQuadraticTerms) {
  testing::LoadedModel l = load_test_model(tmp_.path("text_encoder_2"), {});
  const T5Encoder* model = l.get<T5Encoder>();
  ASSERT_NE(model, nullptr);
  const int64_t tokens = 512, heads = config_.num_heads;
  const int64_t estimate = model->encode_activation_bytes(tokens);
  // The float32 bias, scores and probabilities of every head, at least.
  EXPECT_GE(estimate, 3 * heads * tokens * tokens * 4);
  // Quadratic: doubling the tokens adds more than twice what the first
  // `tokens` added (the fixed allocator slack cancels out).
  const int64_t one = model->encode_activation_bytes(1);
  EXPECT_GT(one, 0);
  EXPECT_GT(model->encode_activation_bytes(2 * tokens) - estimate, 2 * (estimate - one));
}

TEST(T5ReluVariantTest, RunsTheUngatedFeedForward) {
  TempDir tmp;
  T5Config c = demo_t5_config();
  c.feed_forward = T5FeedForward::kRelu;
  c.umt5 = true;
  ASSERT_THAT(write_random_t5_encoder(tmp.path("enc"), c, 3), IsOk());
  testing::LoadedModel l = load_test_model(tmp.path("enc"), {});
  const T5Encoder* model = l.get<T5Encoder>();
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->architecture(), kUmt5Architecture);
  absl::StatusOr<NamedTensors> out = model->step({{"input_ids", torch::tensor({{5, 9, 1}}, torch::kInt64)}});
  ASSERT_THAT(out, IsOk());
  EXPECT_EQ(out->at("last_hidden_state").sizes(), (std::vector<int64_t>{1, 3, c.d_model}));
  EXPECT_TRUE(torch::isfinite(out->at("last_hidden_state")).all().item<bool>());
}

}  // namespace
}  // namespace diffusiond
