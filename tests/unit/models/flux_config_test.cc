// FluxConfig: parsing a diffusers config.json (defaults, out_channels null,
// every bad field named) and inferring one from single-file shapes (what
// is read, what is assumed, and the clear failure when the RoPE split
// cannot be assumed).
#include "core/models/flux/flux_config.h"

#include <map>
#include <tuple>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/config_round_trip.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::expect_json_round_trip;
using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kTiny[] = R"({"_class_name": "FluxTransformer2DModel", "attention_head_dim": 16,
  "axes_dims_rope": [4, 6, 6], "guidance_embeds": true, "in_channels": 64, "joint_attention_dim": 32,
  "num_attention_heads": 2, "num_layers": 2, "num_single_layers": 3, "out_channels": null,
  "patch_size": 1, "pooled_projection_dim": 24})";

TEST(FluxConfig, ParsesTheDiffusersConfig) {
  absl::StatusOr<FluxConfig> c = parse_flux_config(kTiny, "config.json");
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->inner_dim(), 32);
  EXPECT_EQ(c->out_channels, 64);  // null -> in_channels
  EXPECT_EQ(c->num_single_layers, 3);
  EXPECT_TRUE(c->guidance_embeds);
  EXPECT_THAT(c->axes_dims_rope, ElementsAre(4, 6, 6));
  EXPECT_TRUE(c->assumed.empty());
  EXPECT_THAT(c->describe(), Not(HasSubstr("assumed")));
}

TEST(FluxConfig, DefaultsAreFlux1Dev) {
  absl::StatusOr<FluxConfig> c = parse_flux_config(R"({"guidance_embeds": true})", "config.json");
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->inner_dim(), 3072);
  EXPECT_EQ(c->num_layers, 19);
  EXPECT_EQ(c->num_single_layers, 38);
  EXPECT_EQ(c->joint_attention_dim, 4096);
}

TEST(FluxConfig, RejectsEachBadField) {
  EXPECT_THAT(parse_flux_config(R"({"_class_name": "SD3Transformer2DModel"})", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected \"FluxTransformer2DModel\"")));
  EXPECT_THAT(parse_flux_config(R"({"num_layers": "19"})", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("field 'num_layers' is \"19\", expected an integer")));
  EXPECT_THAT(parse_flux_config(R"({"guidance_embeds": 1})", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'guidance_embeds' is 1, expected a boolean")));
  EXPECT_THAT(parse_flux_config(R"({"axes_dims_rope": [16, 56]})", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'axes_dims_rope' is [16,56], expected a list of 3")));
  EXPECT_THAT(parse_flux_config(R"({"axes_dims_rope": [16, 56, 58]})", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("sum to attention_head_dim 128")));
  EXPECT_THAT(parse_flux_config(R"({"axes_dims_rope": [15, 57, 56]})", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("even")));
  EXPECT_THAT(parse_flux_config(R"({"num_attention_heads": 0})", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("num_attention_heads is 0")));
  EXPECT_THAT(parse_flux_config(R"({"num_layers": -1})", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must not be negative")));
  EXPECT_THAT(parse_flux_config("[1]", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("c.json: not a JSON object")));
}

// Canonical-name shapes of a FLUX model with inner dim 3072 and head_dim `hd`.
std::map<std::string, std::vector<int64_t>> shapes(int64_t hd, bool guidance) {
  std::map<std::string, std::vector<int64_t>> s = {
      {"x_embedder.weight", {3072, 64}},
      {"context_embedder.weight", {3072, 4096}},
      {"time_text_embed.text_embedder.linear_1.weight", {3072, 768}},
      {"proj_out.weight", {64, 3072}},
      {"transformer_blocks.0.attn.norm_q.weight", {hd}},
      {"transformer_blocks.18.attn.norm_q.weight", {hd}},
      {"single_transformer_blocks.37.attn.norm_q.weight", {hd}},
  };
  if (guidance) s["time_text_embed.guidance_embedder.linear_1.weight"] = {3072, 256};
  return s;
}

absl::StatusOr<FluxConfig> infer(const std::map<std::string, std::vector<int64_t>>& s) {
  std::vector<std::string> names;
  for (const auto& [name, unused] : s) names.push_back(name);
  return infer_flux_config(
      [&](absl::string_view name) -> std::optional<std::vector<int64_t>> {
        auto it = s.find(std::string(name));
        if (it == s.end()) return std::nullopt;
        return it->second;
      },
      names, "flux.safetensors");
}

TEST(FluxConfig, InfersFlux1FromShapesAndSaysWhatItAssumed) {
  absl::StatusOr<FluxConfig> c = infer(shapes(128, /*guidance=*/false));
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->num_attention_heads, 24);
  EXPECT_EQ(c->num_layers, 19);
  EXPECT_EQ(c->num_single_layers, 38);
  EXPECT_EQ(c->joint_attention_dim, 4096);
  EXPECT_EQ(c->pooled_projection_dim, 768);
  EXPECT_FALSE(c->guidance_embeds);
  EXPECT_THAT(c->axes_dims_rope, ElementsAre(16, 56, 56));
  EXPECT_THAT(c->assumed, ElementsAre("patch_size 1", "axes_dims_rope [16, 56, 56]"));
  EXPECT_THAT(c->describe(), HasSubstr("assumed: patch_size 1, axes_dims_rope [16, 56, 56]"));
  EXPECT_TRUE(infer(shapes(128, /*guidance=*/true))->guidance_embeds);
}

TEST(FluxConfig, InferenceFailsClearly) {
  EXPECT_THAT(infer(shapes(64, false)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("axes_dims_rope is not stored in the weights and FLUX.1's [16, 56, 56] needs "
                                 "head_dim 128, but the q-norm says 64")));
  auto no_norm = shapes(128, false);
  no_norm.erase("transformer_blocks.0.attn.norm_q.weight");
  EXPECT_THAT(infer(no_norm), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("'transformer_blocks.0.attn.norm_q.weight' is missing")));
  auto no_embedder = shapes(128, false);
  no_embedder.erase("x_embedder.weight");
  EXPECT_THAT(infer(no_embedder), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("flux.safetensors: cannot infer the FLUX config: tensor "
                                                     "'x_embedder.weight' is missing")));
  auto odd = shapes(100, false);
  EXPECT_THAT(infer(odd), StatusIs(absl::StatusCode::kInvalidArgument,
                                   HasSubstr("inner dim 3072 is not a multiple of head_dim 100")));
}

// Every member config.json carries, to compare configs field by field.
auto flux_fields(const FluxConfig& c) {
  return std::tie(c.patch_size, c.in_channels, c.out_channels, c.num_layers, c.num_single_layers,
                  c.attention_head_dim, c.num_attention_heads, c.joint_attention_dim, c.pooled_projection_dim,
                  c.guidance_embeds, c.axes_dims_rope);
}

TEST(FluxConfig, ToJsonRoundTripsTheDefaultsAndEveryField) {
  FluxConfig changed;
  changed.patch_size = 2;
  changed.in_channels = 16;
  changed.out_channels = 8;
  changed.num_layers = 1;
  changed.num_single_layers = 2;
  changed.attention_head_dim = 64;
  changed.num_attention_heads = 2;
  changed.joint_attention_dim = 32;
  changed.pooled_projection_dim = 24;
  changed.guidance_embeds = true;
  changed.axes_dims_rope = {8, 28, 28};
  for (const FluxConfig& c : {FluxConfig{}, changed}) expect_json_round_trip(c, parse_flux_config, flux_fields);
  EXPECT_EQ(to_json(FluxConfig{}).at("_class_name"), "FluxTransformer2DModel");
  // As FLUX.1's own config.json: null for "same as in_channels".
  EXPECT_TRUE(to_json(FluxConfig{}).at("out_channels").is_null());
}

}  // namespace
}  // namespace diffusiond
