// write_random_flux and the FLUX demo model: a folder the FLUX family loads
// with its config and schedule, weights drawn by the fixture's rule, and the
// demo registry's "flux" entry.
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <string>

#include "core/models/flux/flux_model.h"
#include "core/models/model_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/loaded_model.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tools/random_models/demo_models.h"
#include "tools/random_models/flux_random.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::load_test_model;
using ::diffusiond::testing::LoadedModel;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;

FluxConfig tiny_config() {
  FluxConfig c;
  c.num_attention_heads = 2;
  c.attention_head_dim = 16;
  c.axes_dims_rope = {4, 6, 6};
  c.num_layers = 1;
  c.num_single_layers = 1;
  c.joint_attention_dim = 32;
  c.pooled_projection_dim = 24;
  c.guidance_embeds = true;
  return c;
}

// A parameter as stored (FP8 storage is off in these loads).
torch::Tensor param(const FluxModel& model, const std::string& name) {
  const torch::Tensor* t = model.weights().dense(name);
  EXPECT_NE(t, nullptr) << name;
  return t != nullptr ? t->to(torch::kFloat32) : torch::zeros({1});
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(FluxRandomTest, WritesAFolderTheFluxFamilyLoadsWithItsConfigAndSchedule) {
  TempDir dir;
  const FluxConfig config = tiny_config();
  ASSERT_THAT(write_random_flux(config, dir.path("m"), 5), IsOk());
  const LoadedModel loaded = load_test_model(dir.path("m"), ModelLoadOptions{});
  const FluxModel* model = loaded.get<FluxModel>();
  ASSERT_NE(model, nullptr);
  const FluxConfig& got = model->config();
  EXPECT_EQ(got.num_attention_heads, config.num_attention_heads);
  EXPECT_EQ(got.attention_head_dim, config.attention_head_dim);
  EXPECT_EQ(got.axes_dims_rope, config.axes_dims_rope);
  EXPECT_EQ(got.num_layers, config.num_layers);
  EXPECT_EQ(got.num_single_layers, config.num_single_layers);
  EXPECT_EQ(got.joint_attention_dim, config.joint_attention_dim);
  EXPECT_EQ(got.pooled_projection_dim, config.pooled_projection_dim);
  EXPECT_EQ(got.out_channels, config.in_channels);
  EXPECT_TRUE(got.guidance_embeds);
  EXPECT_TRUE(got.assumed.empty());
  EXPECT_FALSE(loaded.checkpoint->scheduler_config_json().empty());

  // FLUX.1-dev's scheduler: resolution-dependent shift, mu from the packed tokens.
  const ScheduleOptions s = model->default_schedule({16, 64, 64});
  EXPECT_TRUE(s.dynamic_shift);
  EXPECT_EQ(s.image_seq_len, 32 * 32);
  EXPECT_DOUBLE_EQ(s.base_shift, 0.5);
  EXPECT_DOUBLE_EQ(s.max_shift, 1.15);
}

TEST(FluxRandomTest, SchnellStyleModelsGetAStaticShift) {
  TempDir dir;
  FluxConfig config = tiny_config();
  config.guidance_embeds = false;
  ASSERT_THAT(write_random_flux(config, dir.path("m"), 5), IsOk());
  const LoadedModel loaded = load_test_model(dir.path("m"), ModelLoadOptions{});
  const FluxModel* model = loaded.get<FluxModel>();
  ASSERT_NE(model, nullptr);
  EXPECT_FALSE(model->config().guidance_embeds);
  const ScheduleOptions s = model->default_schedule({16, 64, 64});
  EXPECT_FALSE(s.dynamic_shift);
  EXPECT_DOUBLE_EQ(s.shift, 1.0);
}

TEST(FluxRandomTest, DrawsWeightsByTheFixtureRule) {
  TempDir dir;
  FluxConfig config = tiny_config();
  config.num_attention_heads = 4;  // inner 64: enough values for the statistics
  ASSERT_THAT(write_random_flux(config, dir.path("m"), 9), IsOk());
  const LoadedModel loaded = load_test_model(dir.path("m"), ModelLoadOptions{});
  const FluxModel* model = loaded.get<FluxModel>();
  ASSERT_NE(model, nullptr);
  // Linear weights: std clamp(0.6 / sqrt(fan_in), 0.02, 0.1).
  const torch::Tensor x = param(*model, "x_embedder.weight");  // fan_in 64: 0.075
  EXPECT_NEAR(x.std().item<double>(), 0.6 / 8, 0.006);
  const torch::Tensor ff = param(*model, "transformer_blocks.0.ff.net.2.weight");  // fan_in 256: 0.0375
  EXPECT_NEAR(ff.std().item<double>(), 0.6 / 16, 0.003);
  const torch::Tensor bias = param(*model, "transformer_blocks.0.norm1.linear.bias");
  EXPECT_NEAR(bias.std().item<double>(), 0.05, 0.005);
  const torch::Tensor norms = torch::cat({param(*model, "transformer_blocks.0.attn.norm_q.weight"),
                                          param(*model, "transformer_blocks.0.attn.norm_k.weight"),
                                          param(*model, "transformer_blocks.0.attn.norm_added_q.weight"),
                                          param(*model, "transformer_blocks.0.attn.norm_added_k.weight"),
                                          param(*model, "single_transformer_blocks.0.attn.norm_q.weight"),
                                          param(*model, "single_transformer_blocks.0.attn.norm_k.weight")});
  EXPECT_NEAR(norms.mean().item<double>(), 1.0, 0.05);
  EXPECT_NEAR(norms.std().item<double>(), 0.15, 0.04);
}

TEST(FluxRandomTest, TheSeedDecidesTheWeights) {
  TempDir dir;
  ASSERT_THAT(write_random_flux(tiny_config(), dir.path("a"), 1), IsOk());
  ASSERT_THAT(write_random_flux(tiny_config(), dir.path("b"), 1), IsOk());
  ASSERT_THAT(write_random_flux(tiny_config(), dir.path("c"), 2), IsOk());
  const std::string file = "/diffusion_pytorch_model.safetensors";
  EXPECT_EQ(read_bytes(dir.path("a") + file), read_bytes(dir.path("b") + file));
  EXPECT_NE(read_bytes(dir.path("a") + file), read_bytes(dir.path("c") + file));
}

TEST(FluxRandomTest, RefusesAConfigThatDoesNotValidate) {
  TempDir dir;
  FluxConfig config = tiny_config();
  config.axes_dims_rope = {4, 6, 8};
  EXPECT_THAT(write_random_flux(config, dir.path("m"), 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("axes_dims_rope")));
}

TEST(FluxRandomTest, ConfigsKeepFluxOneInvariants) {
  for (const FluxConfig& c : {demo_flux_config(), mid_size_flux_config()}) {
    EXPECT_THAT(c.validate(), IsOk());
    EXPECT_EQ(c.in_channels, 64);
    EXPECT_TRUE(c.guidance_embeds);
  }
  EXPECT_EQ(mid_size_flux_config().attention_head_dim, 128);
}

TEST(FluxDemoModelTest, IsRegisteredAndDenoisesAStep) {
  EXPECT_THAT(demo_architectures(), Contains("flux"));
  TempDir dir;
  ASSERT_THAT(write_demo_model("flux", dir.path("demo"), 1), IsOk());
  const LoadedModel loaded = load_test_model(dir.path("demo"), ModelLoadOptions{});
  const FluxModel* model = loaded.get<FluxModel>();
  ASSERT_NE(model, nullptr);
  const std::vector<ConditioningInput> inputs = model->conditioning_inputs();
  ASSERT_EQ(inputs.size(), 3u);
  EXPECT_EQ(inputs[2].name, "guidance");
  EXPECT_EQ(inputs[2].kind, ConditioningInput::Kind::kScalar);

  const Conditioning c = random_conditioning(inputs, 7, 3);
  EXPECT_DOUBLE_EQ(c.scalars.at("guidance"), 3.5);
  absl::StatusOr<FlowPredictor> predict = model->flow_predictor(c, nullptr);
  ASSERT_THAT(predict.status(), IsOk());
  absl::StatusOr<FlowPrediction> p = (*predict)(torch::randn({16, 8, 8}), 0.5f, false);
  ASSERT_THAT(p.status(), IsOk());
  EXPECT_EQ(p->positive.sizes().vec(), (std::vector<int64_t>{16, 8, 8}));
  EXPECT_TRUE(torch::isfinite(p->positive).all().item<bool>());
}

TEST(FluxDemoModelTest, AnUnknownArchitectureIsRefusedNamingTheKnownOnes) {
  TempDir dir;
  EXPECT_THAT(write_demo_model("sd3", dir.path("demo"), 1),
              StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("\"sd3\""), HasSubstr("flux"))));
}

}  // namespace
}  // namespace diffusiond
