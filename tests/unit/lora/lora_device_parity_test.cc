// LoRA adapters on a placement's device (DIFFUSIOND_TEST_DEVICE: the
// simulated device by default, cuda:0 in deploy/gpu-check.sh), on the
// lora-tiny fixture (DIFFUSIOND_LORA_FIXTURE): the base placed under half
// its bytes, so blocks stream through the slots, with the adapters attached
// beside the placement's weights. Float32 matches upstream's merged forward
// as on the CPU; over FP8 storage the placed sidecar equals the CPU's.
//
// Tolerance: as lora_parity_test.cc, 10x the fixture's float32 noise floor,
// and no less than the device parity tests' 1e-5 (a device's kernels differ
// from the CPU's in summation order only).
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/checkpoint/checkpoint.h"
#include "core/lora/adapter_set.h"
#include "core/lora/lora_adapter.h"
#include "core/vram/block_layout.h"
#include "core/vram/device_placement.h"
#include "core/vram/residency_plan.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/loaded_model.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tensor_file.h"
#include "tests/testing/test_device.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::load_test_model;
using ::diffusiond::testing::LoadedModel;
using ::diffusiond::testing::max_abs_diff;
using ::diffusiond::testing::TempDir;
using ::diffusiond::testing::TensorFile;

std::string device_lora_fixture() {
  return ::diffusiond::testing::fixture_folder("DIFFUSIOND_LORA_FIXTURE", "lora-tiny");
}

const char* const kDeviceLoraModels[] = {"flux", "zimage", "qwenimage", "wan"};

class VramLoraParity : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (!variant_.at("models").contains(key())) GTEST_SKIP() << "the variant has no " << key();
    std::string skip;
    device_ = ::diffusiond::testing::open_test_device(&skip);
    if (device_ == nullptr) GTEST_SKIP() << "no test device: " << skip;
    spec_ = variant_.at("models").at(key());
    base_ = device_lora_fixture() + "/" + spec_.at("base").get<std::string>();
    tolerance_ = std::max(1e-5, 10 * stats_.at("models").at(key()).at("noise_floor").get<double>());
  }

  std::string key() const { return GetParam(); }

  LoadedModel load_base(bool fp8) {
    ModelLoadOptions options;
    if (fp8) options.fp8.format = Fp8Format::kE4M3Fn;
    const std::string folder = tmp_.path(fp8 ? "base_fp8" : "base");
    ::diffusiond::testing::fixture_model_folder(folder, base_ + "/config.json",
                                                base_ + "/transformer/diffusion_pytorch_model.safetensors",
                                                base_ + "/scheduler_config.json");
    return load_test_model(folder, options);
  }

  // `<key>.fwd.*` as the model's Step takes them (lora_parity_test.cc).
  NamedTensors step_inputs(const Model& model) const {
    NamedTensors in;
    const std::string prefix = key() + ".fwd.";
    absl::StatusOr<std::unique_ptr<Checkpoint>> io = Checkpoint::open(device_lora_fixture() + "/io.safetensors");
    EXPECT_THAT(io, IsOk());
    if (!io.ok()) return in;
    for (const TensorRecord& t : (*io)->tensors()) {
      if (absl::StartsWith(t.name, prefix) && t.name != prefix + "out")
        in[t.name.substr(prefix.size())] = io_.get(t.name);
    }
    if (model.architecture() == "z-image") {
      in["x"] = in["x"].unsqueeze(0);
      in["cap_feats_0"] = in["cap_feats"];
      in.erase("cap_feats");
    }
    if (model.architecture() == "qwen-image") {
      const torch::Tensor latents = TensorFile(base_ + "/io.safetensors").get("pack.latents");
      in["img_shapes"] = torch::tensor({int64_t{1}, latents.size(3) / 2, latents.size(4) / 2}).view({1, 3});
    }
    return in;
  }

  // The adapters of case `c` from their diffusers files (every LoRA of the
  // fixture has one), at the model's compute dtype.
  std::unique_ptr<AdapterSet> adapters(const Model& model, const nlohmann::json& c) const {
    std::vector<WeightedLoraAdapter> list;
    for (const auto& entry : c) {
      const std::string path =
          absl::StrCat(device_lora_fixture(), "/", key(), "/", entry.at(0).get<std::string>(), ".peft.safetensors");
      absl::StatusOr<std::unique_ptr<LoraAdapter>> a =
          LoraAdapter::read(path, model.architecture(), compute_dtype(model));
      EXPECT_THAT(a, IsOk());
      if (!a.ok()) return nullptr;
      list.push_back({std::shared_ptr<const LoraAdapter>(std::move(*a)), entry.at(1).get<double>()});
    }
    absl::StatusOr<std::unique_ptr<AdapterSet>> set = AdapterSet::create(model, std::move(list));
    EXPECT_THAT(set, IsOk());
    return set.ok() ? std::move(*set) : nullptr;
  }

  // Step of `model` with `set` attached: on the test device, placed under
  // half the bytes it needs whole, or (`placed` false) on the CPU.
  torch::Tensor run(const Model& model, const AdapterSet& set, bool placed) {
    const NamedTensors inputs = step_inputs(model);
    if (!placed) {
      LinearAdapterScope attached = set.attach();
      absl::StatusOr<NamedTensors> out = model.step(inputs);
      EXPECT_THAT(out, IsOk());
      return out.ok() ? out->at("out") : torch::Tensor();
    }
    const BlockLayout layout = block_layout(model);
    int64_t whole = layout.global_bytes, largest = 0;
    for (const WeightBlock& b : layout.blocks) whole += b.bytes, largest = std::max(largest, b.bytes);
    const int64_t budget = std::max<int64_t>(whole / 2, layout.global_bytes + 2 * largest);
    absl::StatusOr<ResidencyPlan> plan = plan_residency(layout.residency_input(budget));
    EXPECT_THAT(plan, IsOk());
    if (!plan.ok()) return {};
    Budget vram(Device::kCuda, budget);
    absl::StatusOr<Reservation> r = vram.reserve(plan->device_bytes());
    EXPECT_THAT(r, IsOk());
    if (!r.ok()) return {};
    absl::StatusOr<std::unique_ptr<DevicePlacement>> placement =
        DevicePlacement::create(model, *device_, layout, *plan, *r, PlacementOptions());
    EXPECT_THAT(placement, IsOk());
    if (!placement.ok()) return {};
    torch::Tensor out;
    {
      DeviceForward source(**placement);
      LinearAdapterScope attached = set.attach();
      absl::StatusOr<NamedTensors> o = model.step(inputs);
      EXPECT_THAT(o, IsOk());
      if (o.ok()) out = o->at("out").to(torch::kCPU);
    }
    std::printf("%s on %s: %s\n", key().c_str(), device_->name().c_str(), plan->summary().c_str());
    placement->reset();
    Charge charge = std::move(*r).commit();
    charge.release();
    EXPECT_EQ(device_->allocated_bytes(), 0);
    return out;
  }

  const nlohmann::json variant_ = ::diffusiond::testing::read_json_file(device_lora_fixture() + "/variant.json");
  const nlohmann::json stats_ = ::diffusiond::testing::read_json_file(device_lora_fixture() + "/stats.json");
  nlohmann::json spec_;
  std::string base_;
  double tolerance_ = 0;
  std::unique_ptr<VramDevice> device_;
  TempDir tmp_;
  TensorFile io_{device_lora_fixture() + "/io.safetensors"};
};

TEST_P(VramLoraParity, StreamedForwardWithAdaptersMatchesUpstream) {
  LoadedModel l = load_base(/*fp8=*/false);
  const Model* model = l.get<Model>();
  ASSERT_NE(model, nullptr);
  for (const auto& [name, c] : variant_.at("cases").items()) {
    std::unique_ptr<AdapterSet> set = adapters(*model, c);
    ASSERT_NE(set, nullptr);
    torch::Tensor out = run(*model, *set, /*placed=*/true);
    ASSERT_TRUE(out.defined());
    const torch::Tensor expected = io_.get(absl::StrCat(key(), ".", name, ".out"));
    if (out.dim() == expected.dim() + 1) out = out.squeeze(0);
    const double diff = max_abs_diff(out, expected);
    std::printf("%s %s placed on %s: vs upstream %.3g (tolerance %.3g)\n", key().c_str(), name.c_str(),
                device_->name().c_str(), diff, tolerance_);
    EXPECT_LT(diff, tolerance_) << name;
  }
}

TEST_P(VramLoraParity, Fp8PlacedSidecarEqualsTheCpus) {
  LoadedModel l = load_base(/*fp8=*/true);
  const Model* model = l.get<Model>();
  ASSERT_NE(model, nullptr);
  ASSERT_GT(model->weights().fp8_count(), 0);
  for (const auto& [name, c] : variant_.at("cases").items()) {
    std::unique_ptr<AdapterSet> set = adapters(*model, c);
    ASSERT_NE(set, nullptr);
    const torch::Tensor cpu = run(*model, *set, /*placed=*/false);
    const torch::Tensor placed = run(*model, *set, /*placed=*/true);
    ASSERT_TRUE(cpu.defined() && placed.defined());
    const double diff = max_abs_diff(placed, cpu);
    std::printf("%s %s FP8 placed on %s vs on the CPU: %.3g\n", key().c_str(), name.c_str(), device_->name().c_str(),
                diff);
    EXPECT_LT(diff, tolerance_) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, VramLoraParity, ::testing::ValuesIn(kDeviceLoraModels),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace diffusiond
