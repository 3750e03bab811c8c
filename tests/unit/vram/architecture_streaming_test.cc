// Every newer denoiser placed on the simulated device, whatever its
// architecture: its block containers give a residency plan, and one step of
// its flow predictor (random conditioning of the inputs it declares) is the
// same with half its blocks streamed as fully resident, and as on the CPU,
// bit for bit (the simulated device runs the CPU's kernels). Models: the
// reference fixtures' configs (qwenimage-tiny, krea2-tiny, wan-tiny,
// anima-tiny's Cosmos DiT) with
// six layers instead of two (two equal blocks never stream: the two slots
// would hold them both), random weights from the recipe's parameter table.
#include <torch/types.h>

#include <algorithm>
#include <string>

#include "core/models/model_family.h"
#include "core/util/bytes.h"
#include "core/vram/block_layout.h"
#include "core/vram/device_placement.h"
#include "core/vram/residency_plan.h"
#include "core/vram/sim_device.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/loaded_model.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tools/random_models/random_weights.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;

struct StreamedArchitecture {
  const char* env;      // the fixture's variable, as its parity test reads it
  const char* fixture;  // default fixture name
};

void PrintTo(const StreamedArchitecture& a, std::ostream* os) { *os << a.fixture; }

class ArchitectureStreamingTest : public ::testing::TestWithParam<StreamedArchitecture> {
 protected:
  void SetUp() override {
    const std::string dir = ::diffusiond::testing::fixture_folder(GetParam().env, GetParam().fixture);
    nlohmann::json config = ::diffusiond::testing::read_json_file(dir + "/config.json");
    config["num_layers"] = 6;
    const std::string folder = tmp_.path("model"), json = config.dump();
    ASSERT_THAT(write_text_file(folder + "/config.json", json), IsOk());
    const ModelFamily* family = find_family_for_config(json);
    ASSERT_NE(family, nullptr);
    absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe = family->recipe_for_config(json, folder + "/config.json");
    ASSERT_THAT(recipe, IsOk());
    ASSERT_THAT(write_random_weights(folder + "/diffusion_pytorch_model.safetensors", (*recipe)->parameter_table(), 3),
                IsOk());
    loaded_ = ::diffusiond::testing::load_test_model(folder, ModelLoadOptions{});
    model_ = loaded_.get<DiffusionModel>();
    ASSERT_NE(model_, nullptr);
    layout_ = block_layout(*model_);
  }

  // One unguided step of the predictor over random conditioning.
  torch::Tensor predict() {
    torch::manual_seed(11);
    Conditioning c;
    for (const ConditioningInput& in : model_->conditioning_inputs()) {
      if (in.kind != ConditioningInput::Kind::kTensor || !in.required) continue;
      std::vector<int64_t> shape = in.shape;
      for (int64_t& d : shape) d = d < 0 ? 7 : d;
      c.tensors[in.name] = torch::randn(shape);
    }
    absl::StatusOr<FlowPredictor> predictor = model_->flow_predictor(c, nullptr);
    EXPECT_THAT(predictor, IsOk());
    if (!predictor.ok()) return torch::Tensor();
    const int64_t side = 4 * model_->latent_layout().multiple;
    absl::StatusOr<FlowPrediction> p = (*predictor)(torch::randn({model_->latent_layout().channels, side, side}),
                                                    model_time(model_->flow_convention().time, 600.0f), false);
    EXPECT_THAT(p, IsOk());
    return p.ok() ? p->positive : torch::Tensor();
  }

  // The prediction with the model placed under `budget` on `device`.
  torch::Tensor predict_placed(VramDevice& device, Budget& vram, int64_t budget, bool* streamed) {
    absl::StatusOr<ResidencyPlan> plan = plan_residency(layout_.residency_input(budget));
    EXPECT_THAT(plan, IsOk());
    if (!plan.ok()) return torch::Tensor();
    *streamed = !plan->fully_resident();
    absl::StatusOr<Reservation> r = vram.reserve(plan->device_bytes());
    EXPECT_THAT(r, IsOk());
    if (!r.ok()) return torch::Tensor();
    absl::StatusOr<std::unique_ptr<DevicePlacement>> placement =
        DevicePlacement::create(*model_, device, layout_, *plan, *r);
    EXPECT_THAT(placement, IsOk());
    if (!placement.ok()) return torch::Tensor();
    Charge charge = std::move(*r).commit();
    DeviceForward source(**placement);
    return predict();
  }

  ::diffusiond::testing::TempDir tmp_;
  ::diffusiond::testing::LoadedModel loaded_;
  const DiffusionModel* model_ = nullptr;
  BlockLayout layout_;
};

TEST_P(ArchitectureStreamingTest, HalfTheBlocksStreamedEqualsFullyResidentAndTheCpu) {
  ASSERT_GE(layout_.blocks.size(), 2u) << "the model names no block containers to stream";
  const torch::Tensor cpu = predict();
  ASSERT_TRUE(cpu.defined());
  SimDeviceOptions so;
  so.capacity_bytes = kGiB;
  SimDevice device(so);
  Budget vram(Device::kCuda, kGiB);
  bool streamed = true;
  const torch::Tensor resident = predict_placed(device, vram, kGiB, &streamed);
  EXPECT_FALSE(streamed);
  int64_t largest = 0, blocks = 0;
  for (const WeightBlock& b : layout_.blocks) largest = std::max(largest, b.bytes), blocks += b.bytes;
  const torch::Tensor half = predict_placed(device, vram, layout_.global_bytes + 2 * largest + blocks / 2, &streamed);
  EXPECT_TRUE(streamed) << "half the budget still held every block";
  ASSERT_TRUE(resident.defined() && half.defined());
  EXPECT_TRUE(torch::equal(resident, cpu)) << (resident - cpu).abs().max().item<double>();
  EXPECT_TRUE(torch::equal(half, resident)) << (half - resident).abs().max().item<double>();
  EXPECT_EQ(device.allocated_bytes(), 0);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ArchitectureStreamingTest,
                         ::testing::Values(StreamedArchitecture{"DIFFUSIOND_QWENIMAGE_FIXTURE", "qwenimage-tiny"},
                                           StreamedArchitecture{"DIFFUSIOND_KREA2_FIXTURE", "krea2-tiny"},
                                           StreamedArchitecture{"DIFFUSIOND_WAN_FIXTURE", "wan-tiny"},
                                           StreamedArchitecture{"DIFFUSIOND_ANIMA_FIXTURE", "anima-tiny"}),
                         [](const ::testing::TestParamInfo<StreamedArchitecture>& info) {
                           std::string name;
                           for (const char* c = info.param.fixture; *c != '\0'; ++c) {
                             if (std::isalnum(static_cast<unsigned char>(*c))) name += *c;
                           }
                           return name;
                         });

}  // namespace
}  // namespace diffusiond
