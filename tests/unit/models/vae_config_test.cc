// VaeConfig parsing and inference, the ldm -> diffusers key map, the
// parameter table, tiling defaults and WeightStore::reshape.
#include "core/models/vae/vae_config.h"

#include <map>
#include <tuple>

#include "core/models/vae/vae_params.h"
#include "core/models/vae/vae_tiling.h"
#include "core/precision/weight_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/config_round_trip.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::expect_json_round_trip;
using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;

constexpr const char* kFlux = R"({"_class_name": "AutoencoderKL", "act_fn": "silu",
  "block_out_channels": [128, 256, 512, 512], "layers_per_block": 2, "latent_channels": 16,
  "norm_num_groups": 32, "sample_size": 1024, "scaling_factor": 0.3611, "shift_factor": 0.1159,
  "use_quant_conv": false, "use_post_quant_conv": false, "latents_mean": null,
  "down_block_types": ["DownEncoderBlock2D", "DownEncoderBlock2D", "DownEncoderBlock2D", "DownEncoderBlock2D"],
  "up_block_types": ["UpDecoderBlock2D", "UpDecoderBlock2D", "UpDecoderBlock2D", "UpDecoderBlock2D"]})";

TEST(VaeConfig, ParsesFluxConfig) {
  absl::StatusOr<VaeConfig> c = parse_vae_config(kFlux, "config.json");
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->block_out_channels, (std::vector<int64_t>{128, 256, 512, 512}));
  EXPECT_EQ(c->scale_factor(), 8);
  EXPECT_DOUBLE_EQ(c->shift_factor, 0.1159);
  EXPECT_FALSE(c->use_quant_conv);
  EXPECT_TRUE(c->assumed.empty());
  const VaeTiling t = default_vae_tiling(*c);
  EXPECT_EQ(t.sample_tile, 1024);
  EXPECT_EQ(t.latent_tile, 128);
  EXPECT_DOUBLE_EQ(t.overlap_factor, 0.25);
}

TEST(VaeConfig, AbsentFieldsTakeUpstreamDefaults) {
  absl::StatusOr<VaeConfig> c = parse_vae_config(R"({"shift_factor": null})", "c");
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->block_out_channels, std::vector<int64_t>{64});
  EXPECT_EQ(c->latent_channels, 4);
  EXPECT_DOUBLE_EQ(c->scaling_factor, 0.18215);
  EXPECT_DOUBLE_EQ(c->shift_factor, 0.0);
  EXPECT_TRUE(c->use_quant_conv);
  EXPECT_TRUE(c->use_post_quant_conv);
}

TEST(VaeConfig, RefusesWhatItCannotRun) {
  const std::map<std::string, std::string> cases = {
      {R"({"_class_name": "AutoencoderTiny"})", "_class_name is \"AutoencoderTiny\""},
      {R"({"act_fn": "gelu"})", "field 'act_fn' is \"gelu\", expected \"silu\""},
      {R"({"block_out_channels": [32, 64], "down_block_types": ["DownEncoderBlock2D"]})",
       "field 'down_block_types'"},
      {R"({"block_out_channels": [64], "up_block_types": ["AttnUpDecoderBlock2D"]})", "field 'up_block_types'"},
      {R"({"block_out_channels": [48], "norm_num_groups": 32})", "multiples of norm_num_groups 32"},
      {R"({"block_out_channels": []})", "field 'block_out_channels'"},
      {R"({"latent_channels": 0})", "latent_channels is 0"},
      {R"({"latents_mean": [0.1]})", "field 'latents_mean'"},
      {R"({"use_quant_conv": 1})", "field 'use_quant_conv' is 1, expected a boolean"},
      {R"({"scaling_factor": "x"})", "expected a number"},
      {R"([1])", "not a JSON object"},
  };
  for (const auto& [json, message] : cases) {
    EXPECT_THAT(parse_vae_config(json, "cfg"),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)))
        << json;
  }
}

// Shapes of a FLUX-sized VAE in ldm naming, mapped to canonical names.
std::map<std::string, std::vector<int64_t>> canonical_shapes(const VaeConfig& c) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const ParamSpec& p : vae_parameter_table(c)) shapes[p.name] = p.shape;
  return shapes;
}

TEST(VaeConfig, InfersFromShapesAndSaysWhatItAssumed) {
  absl::StatusOr<VaeConfig> flux = parse_vae_config(kFlux, "c");
  ASSERT_THAT(flux, IsOk());
  const auto shapes = canonical_shapes(*flux);
  std::vector<std::string> names;
  for (const auto& [name, shape] : shapes) names.push_back(name);
  absl::StatusOr<VaeConfig> c = infer_vae_config(
      [&](absl::string_view name) -> std::optional<std::vector<int64_t>> {
        auto it = shapes.find(std::string(name));
        if (it == shapes.end()) return std::nullopt;
        return it->second;
      },
      names, "ae.safetensors");
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->block_out_channels, flux->block_out_channels);
  EXPECT_EQ(c->layers_per_block, 2);
  EXPECT_EQ(c->norm_num_groups, 32);
  EXPECT_EQ(c->latent_channels, 16);
  EXPECT_FALSE(c->use_quant_conv);
  EXPECT_TRUE(c->mid_block_add_attention);
  EXPECT_DOUBLE_EQ(c->scaling_factor, kFluxVaeScalingFactor);
  EXPECT_THAT(c->describe(), HasSubstr("assumed: norm_num_groups 32, sample_size 1024, FLUX scaling_factor"));
  EXPECT_THAT(infer_vae_config([](absl::string_view) { return std::nullopt; }, {}, "x.safetensors"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'encoder.conv_in.weight' is missing")));
}

TEST(VaeKeys, LdmNamesMapToDiffusersNames) {
  const std::map<std::string, std::string> cases = {
      {"encoder.conv_in.weight", "encoder.conv_in.weight"},
      {"encoder.norm_out.bias", "encoder.conv_norm_out.bias"},
      {"first_stage_model.decoder.norm_out.weight", "decoder.conv_norm_out.weight"},
      {"vae.encoder.down.2.block.1.nin_shortcut.weight", "encoder.down_blocks.2.resnets.1.conv_shortcut.weight"},
      {"encoder.down.0.block.0.norm1.weight", "encoder.down_blocks.0.resnets.0.norm1.weight"},
      {"encoder.down.1.downsample.conv.bias", "encoder.down_blocks.1.downsamplers.0.conv.bias"},
      {"decoder.mid.block_1.conv1.weight", "decoder.mid_block.resnets.0.conv1.weight"},
      {"encoder.mid.block_2.norm2.bias", "encoder.mid_block.resnets.1.norm2.bias"},
      {"decoder.mid.attn_1.norm.weight", "decoder.mid_block.attentions.0.group_norm.weight"},
      {"decoder.mid.attn_1.q.weight", "decoder.mid_block.attentions.0.to_q.weight"},
      {"encoder.mid.attn_1.proj_out.bias", "encoder.mid_block.attentions.0.to_out.0.bias"},
      {"decoder.up.3.block.2.conv2.weight", "decoder.up_blocks.0.resnets.2.conv2.weight"},
      {"decoder.up.0.block.0.nin_shortcut.bias", "decoder.up_blocks.3.resnets.0.conv_shortcut.bias"},
      {"decoder.up.1.upsample.conv.weight", "decoder.up_blocks.2.upsamplers.0.conv.weight"},
      {"decoder.mid_block.attentions.0.query.weight", "decoder.mid_block.attentions.0.to_q.weight"},
      {"encoder.mid_block.attentions.0.proj_attn.bias", "encoder.mid_block.attentions.0.to_out.0.bias"},
      {"quant_conv.weight", "quant_conv.weight"},
      {"decoder.up_blocks.1.resnets.0.conv1.weight", "decoder.up_blocks.1.resnets.0.conv1.weight"},
  };
  for (const auto& [from, to] : cases) EXPECT_EQ(vae_canonical_name(from, 4), to) << from;
  for (const char* other : {"model.diffusion_model.x.weight", "loss.logvar", "decoder.up.4.block.0.conv1.weight",
                            "encoder.down.x.block.0.conv1.weight"}) {
    EXPECT_EQ(vae_canonical_name(other, 4), std::nullopt) << other;
  }
  EXPECT_EQ(vae_num_blocks_in({"first_stage_model.encoder.down.3.block.0.conv1.weight", "decoder.conv_in.weight"}), 4);
  EXPECT_EQ(vae_num_blocks_in({"encoder.down_blocks.1.resnets.0.conv1.weight"}), 2);
}

TEST(VaeParams, TableCountsTheFluxVae) {
  absl::StatusOr<VaeConfig> c = parse_vae_config(kFlux, "c");
  ASSERT_THAT(c, IsOk());
  int64_t params = 0;
  for (const ParamSpec& p : vae_parameter_table(*c)) {
    int64_t n = 1;
    for (int64_t d : p.shape) n *= d;
    params += n;
  }
  EXPECT_EQ(params, 83819683);  // FLUX.1-dev's vae/diffusion_pytorch_model.safetensors
  EXPECT_EQ(vae_attention_weight_names(*c).size(), 8u);
  c->use_quant_conv = c->use_post_quant_conv = true;
  EXPECT_EQ(canonical_shapes(*c).at("quant_conv.weight"), (std::vector<int64_t>{32, 32, 1, 1}));
  EXPECT_EQ(canonical_shapes(*c).at("post_quant_conv.weight"), (std::vector<int64_t>{16, 16, 1, 1}));
}

TEST(VaeParams, EveryParameterStaysOffFp8) {
  absl::StatusOr<PrecisionPolicy> policy =
      PrecisionPolicy::create(Fp8Options{Fp8Format::kE4M3Fn, Fp8Scaling::kNone}, vae_precision_declaration());
  ASSERT_THAT(policy, IsOk());
  absl::StatusOr<VaeConfig> c = parse_vae_config(kFlux, "c");
  ASSERT_THAT(c, IsOk());
  for (const ParamSpec& p : vae_parameter_table(*c)) {
    EXPECT_NE(policy->decide(p.name, p.kind).kind, StorageDecision::Kind::kFp8) << p.name;
  }
}

TEST(WeightStoreReshape, ViewsWithoutCopyOrRecount) {
  WeightStore store(torch::kFloat32);
  store.add("w", torch::arange(6, torch::kFloat32).view({3, 2, 1, 1}));
  const int64_t bytes = store.nbytes();
  const void* data = store.dense("w")->data_ptr();
  ASSERT_THAT(store.reshape("w", {3, 2}), IsOk());
  EXPECT_EQ(store.dense("w")->sizes(), torch::IntArrayRef({3, 2}));
  EXPECT_EQ(store.dense("w")->data_ptr(), data);
  EXPECT_EQ(store.nbytes(), bytes);
  EXPECT_THAT(store.reshape("w", {4}), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("has 6 elements")));
  EXPECT_THAT(store.reshape("x", {1}), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no such parameter")));
}

// Every member config.json carries, to compare configs field by field.
auto vae_fields(const VaeConfig& c) {
  return std::tie(c.in_channels, c.out_channels, c.block_out_channels, c.layers_per_block, c.norm_num_groups,
                  c.latent_channels, c.sample_size, c.scaling_factor, c.shift_factor, c.use_quant_conv,
                  c.use_post_quant_conv, c.mid_block_add_attention);
}

// The parser's defaults for absent fields are upstream's, not VaeConfig's,
// so the defaults round-trip only if to_json writes every field.
TEST(VaeConfig, ToJsonRoundTripsTheDefaultsAndEveryField) {
  VaeConfig changed;
  changed.in_channels = 4;
  changed.out_channels = 5;
  changed.block_out_channels = {32, 64};
  changed.layers_per_block = 1;
  changed.norm_num_groups = 8;
  changed.latent_channels = 4;
  changed.sample_size = 256;
  changed.scaling_factor = 0.18215;
  changed.shift_factor = -0.5;
  changed.use_quant_conv = true;
  changed.use_post_quant_conv = true;
  changed.mid_block_add_attention = false;
  for (const VaeConfig& c : {VaeConfig{}, changed}) expect_json_round_trip(c, parse_vae_config, vae_fields);
  EXPECT_EQ(to_json(VaeConfig{}).at("_class_name"), "AutoencoderKL");
}

}  // namespace
}  // namespace diffusiond
