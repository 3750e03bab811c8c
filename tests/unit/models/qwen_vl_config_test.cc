// The Qwen-VL language towers' configs (Qwen2.5-VL's and Qwen3-VL's) and
// key maps: text_config or the older top-level layout, the M-RoPE
// sections, what the ports refuse and why, the round trip through
// to_json(), and which checkpoint names the towers read, rename or drop.
#include <string>
#include <tuple>

#include "core/models/qwen25_vl/qwen25_vl_config.h"
#include "core/models/qwen25_vl/qwen25_vl_family.h"
#include "core/models/qwen3_vl/qwen3_vl_config.h"
#include "core/models/qwen3_vl/qwen3_vl_family.h"
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

// Qwen2.5-VL-7B's layout before transformers 4.5x: the tower's fields at the
// top level, M-RoPE as rope_scaling {type: mrope}.
json qwen25_top_level() {
  return json{{"architectures", {"Qwen2_5_VLForConditionalGeneration"}},
              {"model_type", "qwen2_5_vl"},
              {"vocab_size", 100},
              {"hidden_size", 48},
              {"intermediate_size", 96},
              {"num_hidden_layers", 2},
              {"num_attention_heads", 4},
              {"num_key_value_heads", 2},
              {"rope_theta", 1000000.0},
              {"rope_scaling", {{"type", "mrope"}, {"mrope_section", {2, 2, 2}}}},
              {"use_sliding_window", false},
              {"vision_config", {{"hidden_size", 16}}}};
}

json qwen3vl_config() {
  return json{
      {"architectures", {"Qwen3VLModel"}},
      {"model_type", "qwen3_vl"},
      {"text_config",
       {{"model_type", "qwen3_vl_text"},
        {"vocab_size", 100},
        {"hidden_size", 24},
        {"intermediate_size", 64},
        {"num_hidden_layers", 3},
        {"num_attention_heads", 4},
        {"num_key_value_heads", 2},
        {"head_dim", 16},
        {"attention_bias", true},
        {"rope_scaling", {{"rope_type", "default"}, {"mrope_interleaved", true}, {"mrope_section", {3, 3, 2}}}}}}};
}

TEST(QwenVlConfig, Qwen25VlReadsTheTopLevelOrTextConfig) {
  absl::StatusOr<Qwen25VlConfig> c = qwen25_vl_config_from_json(qwen25_top_level(), "config.json");
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->hidden_size, 48);
  EXPECT_EQ(c->head_dim(), 12);  // hidden / heads: Qwen2.5-VL has no head_dim field
  EXPECT_EQ(c->mrope_section, (std::array<int64_t, 3>{2, 2, 2}));
  const QwenTowerSpec spec = c->tower_spec();
  EXPECT_TRUE(spec.qkv_bias);
  EXPECT_FALSE(spec.o_bias || spec.qk_norm || spec.mrope.interleaved);

  // transformers 4.57 nests the tower: text_config wins over the top level.
  json nested = qwen25_top_level();
  nested["text_config"] = qwen25_top_level();
  nested["text_config"]["hidden_size"] = 24;
  nested["text_config"]["rope_scaling"] = {{"type", "default"}, {"rope_type", "default"}, {"mrope_section", {1, 1, 1}}};
  c = qwen25_vl_config_from_json(nested, "config.json");
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->hidden_size, 24);
  expect_json_round_trip(*c, parse_qwen25_vl_config, [](const Qwen25VlConfig& x) {
    return std::tie(x.vocab_size, x.hidden_size, x.intermediate_size, x.num_hidden_layers, x.num_attention_heads,
                    x.num_key_value_heads, x.max_position_embeddings, x.rope_theta, x.rms_norm_eps, x.mrope_section);
  });
}

TEST(QwenVlConfig, Qwen25VlRefusesWhatThePortDoesNotRun) {
  const auto refused = [](json j, const char* what) {
    EXPECT_THAT(qwen25_vl_config_from_json(j, "config.json"),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(what)))
        << j.dump();
  };
  json j = qwen25_top_level();
  j.erase("rope_scaling");
  refused(j, "field 'rope_scaling' is null, expected an object with mrope_section");
  j = qwen25_top_level();
  j["rope_scaling"]["mrope_section"] = {2, 2, 3};
  refused(j, "mrope_section is [2, 2, 3], expected non-negative sections summing to head_dim / 2 = 6");
  j = qwen25_top_level();
  j["rope_scaling"]["type"] = "yarn";
  refused(j, "rope_scaling.type' is \"yarn\"");
  j = qwen25_top_level();
  j["use_sliding_window"] = true;
  refused(j, "sliding-window attention is not supported");
  j = qwen25_top_level();
  j["hidden_size"] = 50;
  refused(j, "hidden_size 50 is not a multiple of num_attention_heads 4");
  j = qwen25_top_level();
  j["model_type"] = "qwen2_vl";
  refused(j, "field 'model_type' is \"qwen2_vl\", expected \"qwen2_5_vl\"");
  j = qwen25_top_level();
  j["rope_scaling"]["mrope_interleaved"] = true;
  refused(j, "interleaved M-RoPE is Qwen3-VL's");
}

TEST(QwenVlConfig, Qwen3VlReadsItsTextConfig) {
  absl::StatusOr<Qwen3VlConfig> c = qwen3_vl_config_from_json(qwen3vl_config(), "config.json");
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->head_dim, 16);  // 4 x 16 = 64 != 24
  EXPECT_TRUE(c->attention_bias);
  const QwenTowerSpec spec = c->tower_spec();
  EXPECT_TRUE(spec.qk_norm && spec.qkv_bias && spec.o_bias && spec.mrope.interleaved);
  expect_json_round_trip(*c, parse_qwen3_vl_config, [](const Qwen3VlConfig& x) {
    return std::tie(x.vocab_size, x.hidden_size, x.intermediate_size, x.num_hidden_layers, x.num_attention_heads,
                    x.num_key_value_heads, x.head_dim, x.max_position_embeddings, x.rope_theta, x.rms_norm_eps,
                    x.attention_bias, x.mrope_section);
  });
  json j = qwen3vl_config();
  j["architectures"] = {"Qwen3VLMoeForConditionalGeneration"};
  EXPECT_THAT(qwen3_vl_config_from_json(j, "config.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("other heads are not supported")));
  j = qwen3vl_config();
  j["text_config"]["hidden_act"] = "gelu";
  EXPECT_THAT(qwen3_vl_config_from_json(j, "config.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("field 'hidden_act' is \"gelu\"")));
}

// The interleaved layout picks T, H, W in turn over the first 3 * s
// frequencies; the chunked one T, then H, then W.
TEST(QwenVlConfig, MropeRowsPerFrequency) {
  const auto rows = [](int64_t head_dim, MropeLayout layout) {
    const torch::Tensor r = mrope_rows(head_dim, layout);
    return std::vector<int64_t>(r.data_ptr<int64_t>(), r.data_ptr<int64_t>() + r.numel());
  };
  EXPECT_EQ(rows(16, {{3, 3, 2}, true}), (std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0, 1}));
  EXPECT_EQ(rows(16, {{2, 3, 3}, false}), (std::vector<int64_t>{0, 0, 1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(rows(8, {}), (std::vector<int64_t>{0, 0, 0, 0}));
}

TEST(QwenVlConfig, KeyMapsReadBothLayoutsAndDropVisionAndHead) {
  EXPECT_EQ(qwen25_vl_canonical_name("model.layers.0.self_attn.q_proj.bias"), "layers.0.self_attn.q_proj.bias");
  EXPECT_EQ(qwen25_vl_canonical_name("model.language_model.norm.weight"), "norm.weight");
  EXPECT_EQ(qwen3_vl_canonical_name("language_model.embed_tokens.weight"), "embed_tokens.weight");
  EXPECT_EQ(qwen3_vl_canonical_name("model.language_model.layers.1.mlp.up_proj.weight"), "layers.1.mlp.up_proj.weight");
  for (const char* dropped : {"visual.blocks.0.attn.qkv.weight", "model.visual.merger.mlp.0.bias", "lm_head.weight"}) {
    EXPECT_EQ(qwen25_vl_canonical_name(dropped), std::nullopt) << dropped;
    EXPECT_EQ(qwen3_vl_canonical_name(dropped), std::nullopt) << dropped;
  }
  // Anything else keeps its name, which the table check then names.
  EXPECT_EQ(qwen3_vl_canonical_name("mystery.weight"), "mystery.weight");
}

}  // namespace
}  // namespace diffusiond
