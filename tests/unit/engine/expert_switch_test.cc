// Wan 2.2's two experts through a real Engine, over two tiny random Z-Image
// models standing in for them (the switch is the engine's, not the
// architecture's): a Denoise runs the first model above the boundary and
// the second below it, the same latents as the loop over both predictors;
// under a budget for one model and its activations the first is evicted
// to load the second; a list of three segments runs as data; a second
// expert of another architecture is refused before any step.
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/engine/engine.h"
#include "core/models/vae/vae_config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/engine_under_budget.h"
#include "tests/testing/loaded_model.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tiny_z_image.h"
#include "tools/random_models/vae_random.h"
#include "tools/random_models/z_image_random.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class ExpertSwitchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    models_dir_ = dir_.path("models");
    write_experts(::diffusiond::testing::tiny_z_image_config(2));
    VaeConfig vae;
    vae.block_out_channels = {16, 24};
    vae.layers_per_block = 1;
    vae.norm_num_groups = 8;
    ASSERT_THAT(write_random_vae(vae, models_dir_ + "/vae", 3), IsOk());
  }

  // The two experts, "high" and "low", written (again) at `config`.
  void write_experts(const ZImageConfig& config) {
    ASSERT_THAT(write_random_z_image(config, models_dir_ + "/high", 1), IsOk());
    ASSERT_THAT(write_random_z_image(config, models_dir_ + "/low", 2), IsOk());
  }

  void start(int64_t capacity) {
    EngineOptions o;
    o.models_dir = models_dir_;
    o.on_load_progress = [this](const std::string& id, const LoadProgress& p) { reused_[id] = p.reused_bytes; };
    ASSERT_THAT(::diffusiond::testing::start_engine(o, capacity, &ram_, &engine_), IsOk());
  }

  int64_t load(const std::string& id) {
    ModelLoadRequest r;
    r.path = id;
    absl::StatusOr<ModelInfo> info = engine_->load(r);
    EXPECT_THAT(info, IsOk());
    return info.ok() ? info->bytes[kCpuIndex] : 0;
  }

  // Four guided steps of a 16 x 16 latent; timesteps 1000, 750, 500, 250.
  static EngineDenoiseRequest request(const std::string& expert_2) {
    EngineDenoiseRequest r;
    r.model = ModelHandle::by_id("high");
    r.latent_shape = {16, 16, 16};
    r.seed = 7;
    r.sigmas = {1.0f, 0.75f, 0.5f, 0.25f};
    r.guidance_scale = 3.0;
    torch::manual_seed(4);
    r.positive.tensors["cap_feats"] = torch::randn({5, 32});
    Conditioning negative;
    negative.tensors["cap_feats"] = torch::randn({3, 32});
    r.negative = negative;
    r.later_segments = {{expert_2, 0.6, 2.0}};
    return r;
  }

  // Runs `r`; the model of each step in `experts` (0 first, 1 second).
  absl::StatusOr<torch::Tensor> run(const EngineDenoiseRequest& r, std::vector<int>* experts) {
    DenoiseOptions options;
    options.on_step = [&](const StepEvent& e) { experts->push_back(e.segment); };
    return engine_->denoise(r, options);
  }

  std::vector<std::string> loaded() const {
    std::vector<std::string> ids;
    for (const ModelInfo& m : engine_->list()) ids.push_back(m.model_id);
    return ids;
  }

  // Each load's last reused_bytes, by model id (loads run on the calling
  // thread here).
  std::map<std::string, int64_t> reused_;
  // Teardown order: the engine (and its cache) before the budget.
  testing::TempDir dir_;
  std::string models_dir_;
  std::unique_ptr<Budget> ram_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(ExpertSwitchTest, EachExpertRunsItsOwnStepsAsTheLoopOverBothWould) {
  start(int64_t{1} << 30);
  load("high");
  load("low");
  std::vector<int> experts;
  const EngineDenoiseRequest r = request("low");
  absl::StatusOr<torch::Tensor> latents = run(r, &experts);
  ASSERT_THAT(latents, IsOk());
  EXPECT_THAT(experts, ElementsAre(0, 0, 1, 1));

  // The loop over both models' predictors, loaded outside the engine: the
  // switch adds nothing but the choice of model and guidance.
  ModelLoadOptions options;  // as the engine loads by default
  options.compute_dtype = torch::kFloat32;
  options.fp8 = EngineOptions{}.fp8;
  const ::diffusiond::testing::LoadedModel high =
      ::diffusiond::testing::load_test_model(models_dir_ + "/high", options);
  const ::diffusiond::testing::LoadedModel low = ::diffusiond::testing::load_test_model(models_dir_ + "/low", options);
  ASSERT_NE(high.model, nullptr);
  ASSERT_NE(low.model, nullptr);
  absl::StatusOr<FlowPredictor> first = high.model->flow_predictor(r.positive, &*r.negative);
  absl::StatusOr<FlowPredictor> second = low.model->flow_predictor(r.positive, &*r.negative);
  ASSERT_THAT(first, IsOk());
  ASSERT_THAT(second, IsOk());
  DenoiseRequest loop;
  loop.latent_shape = r.latent_shape;
  loop.seed = r.seed;
  loop.schedule.sigmas = r.sigmas;
  loop.has_negative = true;
  absl::StatusOr<DenoiseRun> expected = DenoiseRun::start(high.model->flow_convention(), loop);
  ASSERT_THAT(expected, IsOk());
  ASSERT_THAT(expected->run(*first, 3.0, 2, 0, {}), IsOk());
  ASSERT_THAT(expected->run(*second, 2.0, 4, 1, {}), IsOk());
  EXPECT_TRUE(torch::equal(*latents, std::move(*expected).finish().latents));

  std::vector<int> one_model;
  absl::StatusOr<torch::Tensor> high_only = run(request("high"), &one_model);
  ASSERT_THAT(high_only, IsOk());
  EXPECT_FALSE(torch::equal(*high_only, *latents)) << "the second expert made no difference";
}

// A list of segments is data: three of them, the last back on the first
// model, run as one loop over the three predictors would.
TEST_F(ExpertSwitchTest, ThreeSegmentsRunTheirStepsInOneLoop) {
  start(int64_t{1} << 30);
  load("high");
  load("low");
  EngineDenoiseRequest r = request("low");
  r.later_segments = {{"low", 0.8, 2.0}, {"high", 0.4, 0}};  // steps at 750, 500; at 250
  std::vector<int> segments;
  absl::StatusOr<torch::Tensor> latents = run(r, &segments);
  ASSERT_THAT(latents, IsOk());
  EXPECT_THAT(segments, ElementsAre(0, 1, 1, 2));
  absl::StatusOr<torch::Tensor> two = run(request("low"), &segments);
  ASSERT_THAT(two, IsOk());
  EXPECT_FALSE(torch::equal(*two, *latents)) << "the third segment made no difference";
}

TEST_F(ExpertSwitchTest, UnderABudgetForOneModelTheFirstIsEvictedForTheSecond) {
  // Wide enough that the larger weights get their own mappings (1 MiB or
  // more, as FP8 codes), which the second expert's load writes over.
  ZImageConfig wide = ::diffusiond::testing::tiny_z_image_config(1);
  wide.dim = 1024;
  wide.n_heads = 8;
  wide.axes_dims = {32, 48, 48};
  write_experts(wide);
  start(int64_t{1} << 30);
  ModelLoadRequest low;
  low.path = "low";
  absl::StatusOr<ModelInfo> plan = engine_->inspect(low);  // the load's reservation, staging included
  ASSERT_THAT(plan, IsOk());
  const int64_t model = load("high");
  load("low");
  absl::StatusOr<torch::Tensor> reference;
  int64_t activations = 0;
  {
    DenoiseOptions options;
    options.on_step = [&](const StepEvent&) { activations = std::max(activations, ram_->snapshot().reserved_bytes); };
    reference = engine_->denoise(request("low"), options);
    ASSERT_THAT(reference, IsOk());
  }
  // Room for either model with a step's activations, never for both
  // models: loading the second evicts the first, and writes over its memory.
  const int64_t one = std::max(plan->bytes[kCpuIndex], model + activations);
  const int64_t both = model + plan->bytes[kCpuIndex];
  ASSERT_GT(both, one);
  start(one + (both - one) / 2);
  load("high");
  std::vector<int> experts;
  std::vector<SegmentStart> starts;
  EngineDenoiseRequest r = request("low");
  r.on_segment = [&](const SegmentStart& s) { starts.push_back(s); };
  absl::StatusOr<torch::Tensor> latents = run(r, &experts);
  ASSERT_THAT(latents, IsOk());
  EXPECT_THAT(experts, ElementsAre(0, 0, 1, 1));
  EXPECT_THAT(loaded(), ElementsAre("low")) << "the first expert was evicted to load the second";
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_EQ(starts[0].model_id, "high");
  EXPECT_FALSE(starts[0].loaded);
  EXPECT_EQ(starts[1].model_id, "low");
  EXPECT_EQ(starts[1].first_step, 2);
  EXPECT_TRUE(starts[1].loaded);
  EXPECT_THAT(starts[1].evicted, ElementsAre("high"));
  EXPECT_GT(reused_["low"], model / 2) << "the second expert's load wrote over little of the first's memory";
  EXPECT_TRUE(torch::equal(*latents, *reference)) << "eviction changed the result";
  EXPECT_EQ(ram_->snapshot().reserved_bytes, 0);
  EXPECT_GE(ram_->available_bytes(), 0);
}

TEST_F(ExpertSwitchTest, ASecondExpertOfAnotherArchitectureIsRefusedBeforeAnyStep) {
  start(int64_t{1} << 30);
  load("high");
  std::vector<int> experts;
  EXPECT_THAT(run(request("vae"), &experts),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("every segment must be one architecture")));
  EXPECT_TRUE(experts.empty());
  EXPECT_THAT(loaded(), ElementsAre("high")) << "the refused expert was loaded";
  EngineDenoiseRequest r = request("low");
  r.later_segments[0].boundary_ratio = 1.5;
  EXPECT_THAT(run(r, &experts), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("boundary_ratio")));
  r = request("low");
  r.later_segments.push_back({"high", 0.7, 0});  // above the segment before it
  EXPECT_THAT(run(r, &experts), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("below the segment before it")));
  EXPECT_FALSE(run(request("absent"), &experts).ok());
  EXPECT_TRUE(experts.empty());
  EXPECT_EQ(ram_->snapshot().reserved_bytes, 0);
}

}  // namespace
}  // namespace diffusiond
