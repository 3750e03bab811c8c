#include "core/models/qwen3/qwen3_config.h"

#include <string>
#include <tuple>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/config_round_trip.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::expect_json_round_trip;
using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;
using json = nlohmann::json;

// A Qwen3-4B-shaped config, small: heads * head_dim != hidden_size.
json base_config() {
  return json{{"architectures", {"Qwen3ForCausalLM"}},
              {"model_type", "qwen3"},
              {"vocab_size", 100},
              {"hidden_size", 40},
              {"intermediate_size", 96},
              {"num_hidden_layers", 3},
              {"num_attention_heads", 4},
              {"num_key_value_heads", 2},
              {"head_dim", 16},
              {"max_position_embeddings", 512},
              {"rope_theta", 1000000.0},
              {"rope_scaling", nullptr},
              {"rms_norm_eps", 1e-6},
              {"attention_bias", false},
              {"hidden_act", "silu"},
              {"use_sliding_window", false},
              {"layer_types", {"full_attention", "full_attention", "full_attention"}}};
}

absl::StatusOr<Qwen3Config> parse(const json& j) { return parse_qwen3_config(j.dump(), "config.json"); }

TEST(Qwen3Config, ParsesEveryField) {
  absl::StatusOr<Qwen3Config> c = parse(base_config());
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->vocab_size, 100);
  EXPECT_EQ(c->hidden_size, 40);
  EXPECT_EQ(c->intermediate_size, 96);
  EXPECT_EQ(c->num_hidden_layers, 3);
  EXPECT_EQ(c->num_attention_heads, 4);
  EXPECT_EQ(c->num_key_value_heads, 2);
  EXPECT_EQ(c->head_dim, 16);  // not hidden_size / heads = 10
  EXPECT_EQ(c->kv_group(), 2);
  EXPECT_EQ(c->max_position_embeddings, 512);
  EXPECT_EQ(c->rope_theta, 1000000.0);
  EXPECT_EQ(c->rms_norm_eps, 1e-6);
}

TEST(Qwen3Config, AbsentFieldsTakeUpstreamDefaults) {
  json j = base_config();
  j.erase("head_dim");
  j.erase("rope_theta");
  j.erase("architectures");
  j["num_key_value_heads"] = nullptr;
  absl::StatusOr<Qwen3Config> c = parse(j);
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->head_dim, 128);
  EXPECT_EQ(c->rope_theta, 10000.0);
  EXPECT_EQ(c->num_key_value_heads, 4);
}

TEST(Qwen3Config, AcceptsQwen3ModelAndTransformers5RopeParameters) {
  json j = base_config();
  j["architectures"] = {"Qwen3Model"};
  j.erase("rope_theta");
  j.erase("rope_scaling");
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 5000.0}};
  absl::StatusOr<Qwen3Config> c = parse(j);
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->rope_theta, 5000.0);
}

struct BadField {
  const char* field;
  json value;
  const char* message;
};

class Qwen3ConfigRejects : public ::testing::TestWithParam<BadField> {};

TEST_P(Qwen3ConfigRejects, NamingTheField) {
  json j = base_config();
  j[GetParam().field] = GetParam().value;
  EXPECT_THAT(parse(j), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(GetParam().message)));
}

INSTANTIATE_TEST_SUITE_P(
    Qwen3ConfigFields, Qwen3ConfigRejects,
    ::testing::Values(
        BadField{"model_type", "qwen2", "field 'model_type' is \"qwen2\", expected \"qwen3\""},
        BadField{"architectures", json{"Qwen3ForSequenceClassification"}, "field 'architectures'"},
        BadField{"rope_scaling", json{{"rope_type", "yarn"}, {"factor", 4.0}},
                 "field 'rope_scaling' is {\"factor\":4.0,\"rope_type\":\"yarn\"}, expected null"},
        BadField{"rope_parameters", json{{"rope_type", "linear"}, {"factor", 2.0}},
                 "field 'rope_parameters'"},
        // A rope_type of another JSON type threw out of the parser (config fuzz).
        BadField{"rope_parameters", json{{"rope_type", 5}}, "field 'rope_parameters' is {\"rope_type\":5}"},
        BadField{"attention_bias", true, "field 'attention_bias' is true, expected false"},
        BadField{"use_sliding_window", true, "field 'use_sliding_window' is true"},
        BadField{"layer_types", json{"full_attention", "sliding_attention", "full_attention"},
                 "field 'layer_types'"},
        BadField{"hidden_act", "gelu", "field 'hidden_act' is \"gelu\", expected \"silu\""},
        BadField{"hidden_size", "40", "field 'hidden_size' is \"40\", expected an integer"},
        BadField{"head_dim", 16.5, "field 'head_dim' is 16.5, expected an integer"},
        BadField{"rope_theta", "big", "field 'rope_theta' is \"big\", expected a number"},
        BadField{"num_key_value_heads", 3, "num_attention_heads 4 is not a multiple of num_key_value_heads 3"},
        BadField{"head_dim", 15, "head_dim is 15, expected an even number"},
        BadField{"num_hidden_layers", 0, "num_hidden_layers is 0, expected a positive integer"},
        BadField{"rms_norm_eps", -1.0, "must be positive"}));

TEST(Qwen3Config, MissingModelTypeIsRejected) {
  json j = base_config();
  j.erase("model_type");
  EXPECT_THAT(parse(j), StatusIs(absl::StatusCode::kInvalidArgument,
                                 HasSubstr("config.json: field 'model_type' is null")));
}

TEST(Qwen3Config, MalformedJsonIsRejected) {
  EXPECT_THAT(parse_qwen3_config("[1, 2]", "x/config.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("x/config.json: not a JSON object")));
  EXPECT_FALSE(parse_qwen3_config("{", "x/config.json").ok());
}

// Every member config.json carries, to compare configs field by field.
auto qwen3_fields(const Qwen3Config& c) {
  return std::tie(c.vocab_size, c.hidden_size, c.intermediate_size, c.num_hidden_layers, c.num_attention_heads,
                  c.num_key_value_heads, c.head_dim, c.max_position_embeddings, c.rope_theta, c.rms_norm_eps);
}

TEST(Qwen3Config, ToJsonRoundTripsTheDefaultsAndEveryField) {
  Qwen3Config changed;
  changed.vocab_size = 100;
  changed.hidden_size = 40;
  changed.intermediate_size = 96;
  changed.num_hidden_layers = 3;
  changed.num_attention_heads = 4;
  changed.num_key_value_heads = 2;
  changed.head_dim = 16;
  changed.max_position_embeddings = 128;
  changed.rope_theta = 1e6;
  changed.rms_norm_eps = 1e-5;
  for (const Qwen3Config& c : {Qwen3Config{}, changed}) expect_json_round_trip(c, parse_qwen3_config, qwen3_fields);
}

}  // namespace
}  // namespace diffusiond
