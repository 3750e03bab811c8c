// A model placed on the test device (DIFFUSIOND_TEST_DEVICE: the simulated
// device by default, cuda:0 in deploy/gpu-check.sh): partly streamed, its
// forwards equal the fully resident ones bit for bit (and, on the simulated
// device, the CPU's), and its device memory is what the plan says and
// returns to zero.
#include <torch/types.h>

#include <thread>

#include "core/util/bytes.h"
#include "core/vram/block_layout.h"
#include "core/vram/device_placement.h"
#include "core/vram/residency_plan.h"
#include "core/vram/sim_device.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/loaded_model.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_device.h"
#include "tests/testing/tiny_z_image.h"
#include "tools/random_models/z_image_random.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::load_test_model;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::testing::HasSubstr;

struct Inputs {
  std::vector<torch::Tensor> x, caps;
  torch::Tensor t;
};

Inputs inputs() {
  torch::manual_seed(7);
  return {{torch::randn({16, 1, 8, 8}), torch::randn({16, 1, 4, 6})},
          {torch::randn({5, 32}), torch::randn({9, 32})},
          torch::tensor({0.3f, 0.8f})};
}

class VramPlacementTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    ASSERT_THAT(write_random_z_image(::diffusiond::testing::tiny_z_image_config(4), dir_.path("m"), 4), IsOk());
    ModelLoadOptions options;
    if (GetParam()) options.fp8.format = Fp8Format::kE4M3Fn;
    loaded_ = load_test_model(dir_.path("m"), options);
    ASSERT_NE(loaded_.model, nullptr);
    layout_ = block_layout(*loaded_.model);
    std::string skip;
    device_ = ::diffusiond::testing::open_test_device(&skip);
    if (device_ == nullptr) GTEST_SKIP() << "no test device: " << skip;
    on_cpu_ = device_->torch_device().is_cpu();
  }
  std::vector<torch::Tensor> forward(const Inputs& in) {
    absl::StatusOr<std::vector<torch::Tensor>> out = loaded_.model->forward(in.x, in.t, in.caps);
    EXPECT_THAT(out, IsOk());
    return out.ok() ? *out : std::vector<torch::Tensor>();
  }
  // A placement under `budget` on `device`, charged to `vram`.
  std::unique_ptr<DevicePlacement> place(VramDevice& device, Budget& vram, int64_t budget) {
    absl::StatusOr<ResidencyPlan> plan = plan_residency(layout_.residency_input(budget));
    EXPECT_THAT(plan, IsOk());
    if (!plan.ok()) return nullptr;
    absl::StatusOr<Reservation> r = vram.reserve(plan->device_bytes());
    EXPECT_THAT(r, IsOk());
    absl::StatusOr<std::unique_ptr<DevicePlacement>> p =
        DevicePlacement::create(*loaded_.model, device, layout_, *plan, *r);
    EXPECT_THAT(p, IsOk());
    charge_ = std::move(*r).commit();
    return p.ok() ? std::move(*p) : nullptr;
  }
  // Budget for the globals, the two slots and about half the blocks.
  int64_t half_budget() const {
    int64_t largest = 0, blocks = 0;
    for (const WeightBlock& b : layout_.blocks) largest = std::max(largest, b.bytes), blocks += b.bytes;
    return layout_.global_bytes + 2 * largest + blocks / 2;
  }
  static void expect_equal(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "item " << i;
  }
  // Equal to the CPU's forward: exactly on the simulated device (it runs the
  // CPU's kernels), within float32 summation-order noise on a GPU.
  void expect_cpu_like(const std::vector<torch::Tensor>& device, const std::vector<torch::Tensor>& cpu) {
    if (on_cpu_) return expect_equal(device, cpu);
    ASSERT_EQ(device.size(), cpu.size());
    for (size_t i = 0; i < cpu.size(); ++i) {
      EXPECT_LT((device[i] - cpu[i]).abs().max().item<double>(), 1e-4) << "item " << i;
    }
  }

  TempDir dir_;
  std::unique_ptr<VramDevice> device_;
  bool on_cpu_ = true;
  testing::LoadedModel loaded_;
  BlockLayout layout_;
  Charge charge_;
};

TEST_P(VramPlacementTest, TheLayoutFollowsTheForwardOrder) {
  std::vector<std::string> names;
  for (const WeightBlock& b : layout_.blocks) names.push_back(b.name);
  EXPECT_THAT(names, ::testing::ElementsAre("noise_refiner.0", "context_refiner.0", "layers.0", "layers.1",
                                            "layers.2", "layers.3"));
  int64_t total = layout_.global_bytes;
  for (const WeightBlock& b : layout_.blocks) total += b.bytes;
  EXPECT_GE(total, loaded_.model->weights().nbytes());
}

TEST_P(VramPlacementTest, PartialStreamingEqualsFullResidencyAndTheCpuExactly) {
  const Inputs in = inputs();
  const std::vector<torch::Tensor> cpu = forward(in);

  if (on_cpu_) {
    SimDeviceOptions so;
    so.capacity_bytes = kGiB;
    so.copy_bytes_per_second = 2e8;  // slow enough that compute waits on copies
    device_ = std::make_unique<SimDevice>(so);
  }
  VramDevice& device = *device_;
  Budget vram(Device::kCuda, kGiB);

  std::unique_ptr<DevicePlacement> full = place(device, vram, kGiB);
  ASSERT_NE(full, nullptr);
  ASSERT_TRUE(full->plan().fully_resident());
  std::vector<torch::Tensor> resident;
  {
    DeviceForward source(*full);
    resident = forward(in);
  }
  full.reset();
  charge_.release();
  EXPECT_EQ(device.allocated_bytes(), 0);

  std::unique_ptr<DevicePlacement> half = place(device, vram, half_budget());
  ASSERT_NE(half, nullptr);
  const ResidencyPlan& plan = half->plan();
  ASSERT_FALSE(plan.fully_resident()) << plan.summary();
  ASSERT_GT(plan.resident_blocks, 0) << plan.summary();
  EXPECT_LE(device.allocated_bytes(), plan.device_bytes());
  EXPECT_LE(plan.device_bytes(), half_budget());
  std::vector<torch::Tensor> streamed;
  for (int pass = 0; pass < 3; ++pass) {
    DeviceForward source(*half);
    streamed = forward(in);
    expect_equal(streamed, resident);
  }
  expect_cpu_like(resident, cpu);
  // Every streamed block is copied once per forward, but for those still
  // in a slot from the forward before (at most one per slot).
  int64_t per_forward = 0;  // the streamed weights' own bytes (the plan's are aligned)
  for (size_t b = 0; b < layout_.blocks.size(); ++b) {
    if (plan.resident[b]) continue;
    for (const std::string& name : layout_.blocks[b].weights) {
      const WeightStore& w = loaded_.model->weights();
      per_forward += w.is_fp8(name) ? w.fp8(name)->nbytes() : static_cast<int64_t>(w.dense(name)->nbytes());
    }
  }
  EXPECT_GE(half->bytes_streamed(), 3 * per_forward - 2 * plan.slot_bytes);
  EXPECT_LE(half->bytes_streamed(), 3 * per_forward);
  half.reset();
  charge_.release();
  EXPECT_EQ(device.allocated_bytes(), 0);
  EXPECT_EQ(vram.snapshot().committed_bytes, 0);
}

TEST_P(VramPlacementTest, ForwardsOfOneStreamingPlacementFromTwoThreadsTakeTurns) {
  const Inputs in = inputs();
  const std::vector<torch::Tensor> cpu = forward(in);
  Budget vram(Device::kCuda, kGiB);
  std::unique_ptr<DevicePlacement> half = place(*device_, vram, half_budget());
  ASSERT_NE(half, nullptr);
  std::vector<std::vector<torch::Tensor>> outs(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 3; ++i) {
        DeviceForward source(*half);
        outs[t] = loaded_.model->forward(in.x, in.t, in.caps).value();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  expect_cpu_like(outs[0], cpu);
  expect_equal(outs[1], outs[0]);
  half.reset();
  charge_.release();  // before the budget goes
}

// An FP8 linear that is upcast (float32 compute here) decodes its weight
// into one workspace per forward, sized once to the largest FP8 weight,
// never into a fresh tensor per weight; streamed weights (read from their
// slots) share it.
TEST_P(VramPlacementTest, UpcastFp8LinearsShareOneDecodeWorkspacePerForward) {
  const Inputs in = inputs();
  const std::vector<torch::Tensor> cpu = forward(in);
  Budget vram(Device::kCuda, kGiB);
  std::unique_ptr<DevicePlacement> half = place(*device_, vram, half_budget());
  ASSERT_NE(half, nullptr);
  for (int pass = 0; pass < 2; ++pass) {
    DeviceForward source(*half);
    expect_cpu_like(forward(in), cpu);
    EXPECT_EQ(source.decode_workspace_allocations(), GetParam() ? 1 : 0) << "pass " << pass;
  }
  half.reset();
  charge_.release();
}

TEST_P(VramPlacementTest, ADeviceThatRefusesMemoryFailsThePlacementCleanly) {
  SimDeviceOptions so;
  so.capacity_bytes = layout_.global_bytes / 2;  // less than the plan asks
  SimDevice device(so);
  Budget vram(Device::kCuda, kGiB);
  absl::StatusOr<ResidencyPlan> plan = plan_residency(layout_.residency_input(kGiB));
  ASSERT_THAT(plan, IsOk());
  absl::StatusOr<Reservation> r = vram.reserve(plan->device_bytes());
  ASSERT_THAT(r, IsOk());
  EXPECT_THAT(DevicePlacement::create(*loaded_.model, device, layout_, *plan, *r),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("sim device out of memory")));
  EXPECT_EQ(device.allocated_bytes(), 0);
}

INSTANTIATE_TEST_SUITE_P(Storage, VramPlacementTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "Fp8" : "Float32"; });

}  // namespace
}  // namespace diffusiond
