// The demo registry (tools/random_models/demo_models.h) over every
// architecture it lists: each demo model is written as a diffusers folder
// its family loads, and denoises a step (guided where the architecture takes
// a negative) on the latents demo_latent_shape gives it; the mid-size
// configurations keep the sizes the benchmarks' figures rely on.
#include "tools/random_models/demo_models.h"

#include <torch/types.h>

#include <string>
#include <vector>

#include "core/models/diffusion_model.h"
#include "core/models/model_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/loaded_model.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tools/random_models/cosmos_random.h"
#include "tools/random_models/krea2_random.h"
#include "tools/random_models/qwen_image_random.h"
#include "tools/random_models/wan_random.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::load_test_model;
using ::diffusiond::testing::LoadedModel;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(DemoModelsTest, ListsEveryServedDenoiserArchitecture) {
  EXPECT_THAT(demo_architectures(), ElementsAre("z-image", "flux", "qwen-image", "krea2", "wan", "cosmos"));
}

class DemoModel : public ::testing::TestWithParam<std::string> {};

TEST_P(DemoModel, LoadsAsItsArchitectureAndDenoisesAGuidedStep) {
  const std::string& arch = GetParam();
  TempDir dir;
  ASSERT_THAT(write_demo_model(arch, dir.path("demo"), 1), IsOk());
  const LoadedModel loaded = load_test_model(dir.path("demo"), ModelLoadOptions{});
  const DiffusionModel* model = loaded.get<DiffusionModel>();
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->architecture(), arch);

  const std::vector<ConditioningInput> inputs = model->conditioning_inputs();
  const Conditioning positive = random_conditioning(inputs, 7, 3);
  const Conditioning negative = random_conditioning(inputs, 5, 4);
  for (const ConditioningInput& in : inputs) {
    EXPECT_EQ(positive.tensors.count(in.name), in.kind == ConditioningInput::Kind::kTensor && in.required ? 1u : 0u)
        << in.name;
  }
  const bool guided = model->supports_negative();
  absl::StatusOr<FlowPredictor> predict = model->flow_predictor(positive, guided ? &negative : nullptr);
  ASSERT_THAT(predict.status(), IsOk());
  const std::vector<int64_t> shape = demo_latent_shape(model->latent_layout(), 8, 2);
  EXPECT_THAT(check_latent_shape(model->latent_layout(), shape, arch), IsOk());
  absl::StatusOr<FlowPrediction> p = (*predict)(torch::randn(shape), 0.5f, guided);
  ASSERT_THAT(p.status(), IsOk());
  EXPECT_EQ(p->positive.sizes().vec(), shape);
  EXPECT_TRUE(torch::isfinite(p->positive).all().item<bool>());
  if (guided) {
    EXPECT_TRUE(torch::isfinite(p->negative).all().item<bool>());
  }
}

// Narrow weights (PlanOptions::keep_narrow) under float32 compute: the demo
// models are bf16, so every weight stays bf16 in RAM and is upcast per use.
// The upcast is exact, so the step must equal the widened model's bit for
// bit while the model holds half the bytes.
TEST_P(DemoModel, NarrowWeightsGiveTheSameStepBitForBitInHalfTheBytes) {
  const std::string& arch = GetParam();
  TempDir dir;
  ASSERT_THAT(write_demo_model(arch, dir.path("demo"), 3), IsOk());
  ModelLoadOptions narrow_options;
  narrow_options.keep_narrow = true;
  const LoadedModel wide = load_test_model(dir.path("demo"), ModelLoadOptions{});
  const LoadedModel narrow = load_test_model(dir.path("demo"), narrow_options);
  const DiffusionModel* w = wide.get<DiffusionModel>();
  const DiffusionModel* n = narrow.get<DiffusionModel>();
  ASSERT_NE(w, nullptr);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->weights().compute_dtype(), torch::kFloat32);
  // Float32 keep-in-fp32 modules (Wan's time embedder) stay float32.
  EXPECT_LE(n->weights().nbytes(), w->weights().nbytes() * 6 / 10);

  const Conditioning positive = random_conditioning(w->conditioning_inputs(), 7, 3);
  const std::vector<int64_t> shape = demo_latent_shape(w->latent_layout(), 8, 2);
  torch::manual_seed(11);
  const torch::Tensor latents = torch::randn(shape);
  absl::StatusOr<FlowPredictor> pw = w->flow_predictor(positive, nullptr);
  absl::StatusOr<FlowPredictor> pn = n->flow_predictor(positive, nullptr);
  ASSERT_THAT(pw.status(), IsOk());
  ASSERT_THAT(pn.status(), IsOk());
  absl::StatusOr<FlowPrediction> yw = (*pw)(latents, 0.5f, false);
  absl::StatusOr<FlowPrediction> yn = (*pn)(latents, 0.5f, false);
  ASSERT_THAT(yw.status(), IsOk());
  ASSERT_THAT(yn.status(), IsOk());
  EXPECT_EQ(yn->positive.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::equal(yw->positive, yn->positive)) << arch;
}

INSTANTIATE_TEST_SUITE_P(EveryArchitecture, DemoModel, ::testing::ValuesIn(demo_architectures()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name;
                           for (char c : info.param) {
                             if (c != '-') name += c;
                           }
                           return name;
                         });

TEST(DemoModelsTest, AVideoModelsLatentsHaveFramesWithinItsLimit) {
  LatentLayout image{16, 2, 512, 0}, video{16, 2, 2048, 4};
  EXPECT_THAT(demo_latent_shape(image, 64, 2), ElementsAre(16, 64, 64));
  EXPECT_THAT(demo_latent_shape(video, 64, 2), ElementsAre(16, 2, 64, 64));
  EXPECT_THAT(demo_latent_shape(video, 64, 9), ElementsAre(16, 4, 64, 64));
  EXPECT_THAT(demo_latent_shape(video, 64, 0), ElementsAre(16, 1, 64, 64));
}

TEST(DemoModelsTest, MidSizeConfigsAreTwelveHeadsOf128) {
  const QwenImageConfig qwen = mid_size_qwen_image_config();
  const Krea2Config krea2 = mid_size_krea2_config();
  const WanConfig wan = mid_size_wan_config();
  EXPECT_THAT(qwen.validate(), IsOk());
  EXPECT_THAT(krea2.validate(), IsOk());
  EXPECT_THAT(wan.validate(), IsOk());
  EXPECT_EQ(qwen.inner_dim(), 1536);
  EXPECT_EQ(krea2.hidden_size(), 1536);
  EXPECT_EQ(krea2.num_key_value_heads, 3);
  EXPECT_EQ(wan.inner_dim(), 1536);
  for (const QwenImageConfig& c : {demo_qwen_image_config(), qwen}) EXPECT_THAT(c.validate(), IsOk());
  for (const Krea2Config& c : {demo_krea2_config(), krea2}) EXPECT_THAT(c.validate(), IsOk());
  for (const WanConfig& c : {demo_wan_config(), wan}) EXPECT_THAT(c.validate(), IsOk());
  // Cosmos is benchmarked at Anima's own width, not 1536.
  const CosmosConfig cosmos = mid_size_cosmos_config();
  EXPECT_EQ(cosmos.hidden_size(), 2048);
  for (const CosmosConfig& c : {demo_cosmos_config(), cosmos}) EXPECT_THAT(c.validate(), IsOk());
}

TEST(DemoModelsTest, AnUnknownArchitectureHasNoMidSizeModel) {
  TempDir dir;
  EXPECT_THAT(write_mid_size_model("sd3", dir.path("m"), 1).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"sd3\"")));
}

}  // namespace
}  // namespace diffusiond
