// The engine's VRAM tier on the simulated device: denoisers are placed
// before their steps, placements are evicted to RAM (never re-read from
// disk) to make room, and dropped with their model.
#include <torch/types.h>

#include "core/engine/engine.h"
#include "core/util/bytes.h"
#include "core/vram/device_placement.h"
#include "core/vram/sim_device.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tiny_z_image.h"
#include "tools/random_models/demo_models.h"
#include "tools/random_models/flux_random.h"
#include "tools/random_models/z_image_random.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::testing::HasSubstr;

class VramEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    models_ = dir_.path("models");
    ASSERT_THAT(write_random_z_image(::diffusiond::testing::tiny_z_image_config(2), models_ + "/a", 1), IsOk());
    ASSERT_THAT(write_random_z_image(::diffusiond::testing::tiny_z_image_config(2), models_ + "/b", 2), IsOk());
  }
  void start(int64_t vram_bytes) {
    engine_.reset();
    device_ = std::make_unique<SimDevice>(SimDeviceOptions{kGiB, 0});
    vram_ = std::make_unique<Budget>(Device::kCuda, vram_bytes);
    EngineOptions o;
    o.models_dir = models_;
    o.ram_budget = &ram_;
    o.device = device_.get();
    o.vram_budget = vram_.get();
    absl::StatusOr<std::unique_ptr<Engine>> e = Engine::create(o);
    ASSERT_THAT(e, IsOk());
    engine_ = std::move(*e);
  }
  void load(const std::string& id) {
    ModelLoadRequest r;
    r.path = id;
    r.model_id = id;
    r.fp8 = Fp8Options{std::nullopt, Fp8Scaling::kNone};
    ASSERT_THAT(engine_->load(r), IsOk());
  }
  NamedTensors inputs() {
    torch::manual_seed(3);
    return {{"x", torch::randn({1, 16, 1, 4, 4})}, {"t", torch::tensor({0.5f})}, {"cap_feats", torch::randn({1, 5, 32})}};
  }
  ModelInfo info(const std::string& id) {
    for (const ModelInfo& m : engine_->list()) {
      if (m.model_id == id) return m;
    }
    ADD_FAILURE() << id << " not listed";
    return {};
  }
  // The VRAM one placement of a model holds, and a step's activations
  // beside it (the rest of the budget's high water).
  struct Sizes {
    int64_t placement = 0;
    int64_t activations = 0;
  };
  Sizes sizes() {
    start(kGiB);
    load("a");
    EXPECT_THAT(engine_->step("a", inputs()), IsOk());
    Sizes s;
    s.placement = info("a").bytes[kCudaIndex];
    s.activations = vram_->snapshot().high_water_bytes - s.placement;
    EXPECT_GT(s.activations, 0);
    return s;
  }

  TempDir dir_;
  std::string models_;
  Budget ram_{Device::kCpu, kGiB};
  std::unique_ptr<SimDevice> device_;
  std::unique_ptr<Budget> vram_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(VramEngineTest, CreateWantsADeviceAndAVramBudgetTogether) {
  Budget vram(Device::kCuda, kGiB);
  EngineOptions o;
  o.models_dir = models_;
  o.ram_budget = &ram_;
  o.vram_budget = &vram;
  EXPECT_THAT(Engine::create(o), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("go together")));
}

TEST_F(VramEngineTest, AStepOnTheDeviceEqualsTheCpuStepAndReportsThePlacement) {
  // The CPU's answer, from an engine without a device.
  absl::StatusOr<NamedTensors> cpu;
  {
    EngineOptions o;
    o.models_dir = models_;
    o.ram_budget = &ram_;
    std::unique_ptr<Engine> plain = *Engine::create(o);
    ModelLoadRequest r;
    r.path = "a";
    r.fp8 = Fp8Options{std::nullopt, Fp8Scaling::kNone};
    ASSERT_THAT(plain->load(r), IsOk());
    cpu = plain->step("a", inputs());
    ASSERT_THAT(cpu, IsOk());
  }
  start(kGiB);
  load("a");
  EXPECT_EQ(info("a").bytes[kCudaIndex], 0);  // placed at its first step
  absl::StatusOr<NamedTensors> out = engine_->step("a", inputs());
  ASSERT_THAT(out, IsOk());
  EXPECT_TRUE(torch::equal(out->at("out"), cpu->at("out")));
  const ModelInfo m = info("a");
  EXPECT_GT(m.bytes[kCudaIndex], 0);
  EXPECT_EQ(m.vram_plan, "all 4 blocks resident");
  EXPECT_EQ(m.vram_streamed_bytes_per_step, 0);
  EXPECT_EQ(device_->allocated_bytes() > 0, true);
  EXPECT_LE(device_->allocated_bytes(), m.bytes[kCudaIndex]);
}

TEST_F(VramEngineTest, PlacementsAreEvictedToRamAndPlacedAgainWithoutReloading) {
  const Sizes one = sizes();
  ASSERT_GT(one.placement, 0);
  start(one.placement + one.placement / 2 + one.activations);  // room for one placement, not two
  load("a");
  load("b");
  ASSERT_THAT(engine_->step("a", inputs()), IsOk());
  ASSERT_THAT(engine_->step("b", inputs()), IsOk());  // evicts a's placement
  EXPECT_EQ(info("a").bytes[kCudaIndex], 0);
  EXPECT_GT(info("a").bytes[kCpuIndex], 0);  // still in RAM
  EXPECT_GT(info("b").bytes[kCudaIndex], 0);
  const int64_t misses = engine_->stats().misses;
  ASSERT_THAT(engine_->step("a", inputs()), IsOk());  // placed again, from RAM
  EXPECT_EQ(engine_->stats().misses, misses);
  EXPECT_GT(info("a").bytes[kCudaIndex], 0);
  const CacheStats vram = *engine_->vram_stats();
  EXPECT_EQ(vram.evictions, 2);
  EXPECT_LE(vram.budgets[1].high_water_bytes, vram_->capacity_bytes());
  EXPECT_LE(device_->allocated_bytes(), vram_->capacity_bytes());
}

TEST_F(VramEngineTest, ABudgetBelowTheSmallestPlanIsRefusedClearly) {
  start(4096);
  load("a");
  EXPECT_THAT(
      engine_->step("a", inputs()),
      StatusIs(absl::StatusCode::kResourceExhausted,
               ::testing::AllOf(HasSubstr("model \"a\" on sim: the VRAM budget is 4.00 KiB (4096 "
                                          "bytes) and this call's activations take "),
                                HasSubstr("of VRAM for weights cannot run this model"), HasSubstr("streaming slots"))));
  EXPECT_EQ(device_->allocated_bytes(), 0);
  EXPECT_EQ(vram_->snapshot().committed_bytes + vram_->snapshot().reserved_bytes, 0);
  // Counted as a refusal of device memory (diffusiond_vram_rejections_total).
  EXPECT_EQ(engine_->vram_stats()->rejections, 1);
}

TEST_F(VramEngineTest, AStreamingPlanRunsTheSameStep) {
  const Sizes whole = sizes();
  const NamedTensors in = inputs();
  const torch::Tensor resident = engine_->step("a", in)->at("out");
  start(whole.placement * 9 / 10 + whole.activations);  // the embedders are most of this tiny model
  load("a");
  absl::StatusOr<NamedTensors> out = engine_->step("a", in);
  ASSERT_THAT(out, IsOk());
  EXPECT_TRUE(torch::equal(out->at("out"), resident));
  EXPECT_THAT(info("a").vram_plan, HasSubstr("streamed"));
  EXPECT_GT(info("a").vram_streamed_bytes_per_step, 0);
}

TEST_F(VramEngineTest, UnloadingAModelDropsItsPlacement) {
  start(kGiB);
  load("a");
  ASSERT_THAT(engine_->step("a", inputs()), IsOk());
  const int64_t placed = vram_->snapshot().committed_bytes;
  ASSERT_GT(placed, 0);
  absl::StatusOr<UnloadResult> r = engine_->unload("a", UnloadOptions{});
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->freed_bytes[kCudaIndex], placed);
  EXPECT_GT(r->freed_bytes[kCpuIndex], 0);
  EXPECT_EQ(vram_->snapshot().committed_bytes, 0);
  EXPECT_EQ(device_->allocated_bytes(), 0);
}

TEST_F(VramEngineTest, DenoiseRunsOnThePlacement) {
  start(kGiB);
  load("a");
  EngineDenoiseRequest r;
  r.model = ModelHandle::by_id("a");
  r.latent_shape = {16, 4, 4};
  r.seed = 5;
  r.steps = 2;
  torch::manual_seed(2);
  r.positive.tensors["cap_feats"] = torch::randn({5, 32});
  absl::StatusOr<torch::Tensor> latents = engine_->denoise(r, DenoiseOptions{});
  ASSERT_THAT(latents, IsOk());
  EXPECT_EQ(latents->sizes().vec(), (std::vector<int64_t>{16, 4, 4}));
  EXPECT_GT(info("a").bytes[kCudaIndex], 0);
}

// FLUX through the generic denoise loop: a partly streamed placement gives
// the CPU's latents exactly.
TEST_F(VramEngineTest, FluxDenoisesOnAStreamingPlacementAsOnTheCpu) {
  const FluxConfig config = demo_flux_config();
  ASSERT_THAT(write_random_flux(config, models_ + "/flux", 3), IsOk());
  const auto denoise = [&](Engine& engine) -> torch::Tensor {
    ModelLoadRequest load;
    load.path = "flux";
    load.model_id = "flux";
    absl::StatusOr<ModelInfo> info = engine.load(load);
    EXPECT_THAT(info, IsOk());
    if (!info.ok()) return {};
    EngineDenoiseRequest r;
    r.model = ModelHandle::by_id("flux");
    r.latent_shape = {config.in_channels / 4, 8, 8};
    r.seed = 9;
    r.steps = 2;
    r.positive = random_conditioning(info->conditioning, 4, 1);
    absl::StatusOr<torch::Tensor> out = engine.denoise(r, DenoiseOptions{});
    EXPECT_THAT(out, IsOk());
    return out.ok() ? *out : torch::Tensor();
  };
  EngineOptions o;
  o.models_dir = models_;
  o.ram_budget = &ram_;
  const torch::Tensor cpu = denoise(**Engine::create(o));
  ASSERT_TRUE(cpu.defined());

  start(kGiB);
  ASSERT_TRUE(denoise(*engine_).defined());
  const int64_t whole = info("flux").bytes[kCudaIndex];
  const int64_t activations = vram_->snapshot().high_water_bytes - whole;
  start(whole * 9 / 10 + activations);
  const torch::Tensor streamed = denoise(*engine_);
  ASSERT_TRUE(streamed.defined());
  EXPECT_THAT(info("flux").vram_plan, HasSubstr("streamed"));
  EXPECT_TRUE(torch::equal(streamed, cpu));
}

}  // namespace
}  // namespace diffusiond
