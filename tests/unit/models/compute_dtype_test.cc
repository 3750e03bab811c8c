// compute_dtype(model), set at load, is the only dtype source: a model whose
// first stored parameter is FP8, or whose first parameter is a Linear rather
// than the pad token upstream reads its dtype from, still runs every linear
// at the compute dtype.
#include <filesystem>
#include <string>
#include <vector>

#include "core/checkpoint/safetensors_writer.h"
#include "core/engine/loaded_model.h"
#include "core/models/flux/flux_model.h"
#include "core/models/model_loader.h"
#include "core/models/z_image/z_image_model.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/loaded_model.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tensor_file.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::load_test_model;
using ::diffusiond::testing::LoadedModel;
using ::diffusiond::testing::max_abs_diff;
using ::diffusiond::testing::TempDir;
using ::diffusiond::testing::TensorFile;

const std::string kFixture = ::diffusiond::testing::fixtures_dir() + "/zimage-tiny";

// Rewrites the fixture's single file with `first` moved to the front.
std::string reordered_single_file(const TempDir& dir, const std::string& first) {
  absl::StatusOr<std::unique_ptr<Checkpoint>> src = Checkpoint::open(kFixture + "/single_file.safetensors");
  EXPECT_THAT(src, IsOk());
  std::vector<const TensorRecord*> order;
  for (const TensorRecord& t : (*src)->tensors()) {
    if (t.name == first) order.insert(order.begin(), &t);
    else order.push_back(&t);
  }
  EXPECT_EQ(order.front()->name, first);
  std::vector<TensorSpec> specs;
  for (const TensorRecord* t : order) specs.push_back({t->name, t->dtype, t->shape});
  const std::string path = dir.path("reordered.safetensors");
  auto writer = SafetensorsWriter::create(path, specs);
  EXPECT_THAT(writer, IsOk());
  for (const TensorRecord* t : order) {
    std::string bytes(t->nbytes, '\0');
    EXPECT_THAT((*src)->read(*t, bytes.data()), IsOk());
    EXPECT_THAT((*writer)->append(bytes.data(), t->nbytes), IsOk());
  }
  EXPECT_THAT((*writer)->close(), IsOk());
  return path;
}

LoadedModel load(const std::string& path, torch::ScalarType dtype, bool fp8) {
  ModelLoadOptions options;
  options.compute_dtype = dtype;
  if (fp8) options.fp8.format = Fp8Format::kE4M3Fn;
  return load_test_model(path, options);
}

void expect_every_parameter_at(const ZImageModel& model, torch::ScalarType dtype) {
  for (const std::string& name : model.weights().names()) {
    absl::StatusOr<torch::Tensor> t = model.weights().at_compute_dtype(name);
    ASSERT_THAT(t, IsOk());
    EXPECT_EQ(t->scalar_type(), dtype) << name;
  }
}

TEST(ComputeDtype, FirstStoredParameterIsFp8) {
  TempDir dir;
  const std::string path = reordered_single_file(dir, "layers.0.feed_forward.w1.weight");
  LoadedModel m = load(path, torch::kFloat32, /*fp8=*/true);
  ASSERT_NE(m.model, nullptr);
  const ZImageModel& model = *m.model;
  ASSERT_TRUE(model.weights().is_fp8("layers.0.feed_forward.w1.weight"));
  EXPECT_EQ(compute_dtype(model), torch::kFloat32);
  expect_every_parameter_at(model, torch::kFloat32);
  TensorFile io(kFixture + "/io.safetensors");
  // Float64 inputs: the forward must convert them, not follow them.
  absl::StatusOr<std::vector<torch::Tensor>> out = model.forward(
      {io.get("fwd.x").to(torch::kFloat64)}, io.get("fwd.t").to(torch::kFloat64),
      {io.get("fwd.cap_feats").to(torch::kFloat64)});
  ASSERT_THAT(out, IsOk());
  EXPECT_EQ((*out)[0].scalar_type(), torch::kFloat32);
  EXPECT_LT(max_abs_diff((*out)[0], io.get("fwd.out_fp8")), 1e-5);
}

TEST(ComputeDtype, LinearBeforePadTokensRunsAtBfloat16) {
  TempDir dir;
  const std::string path = reordered_single_file(dir, "x_embedder.weight");
  LoadedModel m = load(path, torch::kBFloat16, /*fp8=*/true);
  ASSERT_NE(m.model, nullptr);
  const ZImageModel& model = *m.model;
  EXPECT_EQ(compute_dtype(model), torch::kBFloat16);
  expect_every_parameter_at(model, torch::kBFloat16);
  TensorFile io(kFixture + "/io.safetensors");
  absl::StatusOr<std::vector<torch::Tensor>> out =
      model.forward({io.get("fwd.x")}, io.get("fwd.t"), {io.get("fwd.cap_feats")});
  ASSERT_THAT(out, IsOk());
  EXPECT_EQ((*out)[0].scalar_type(), torch::kBFloat16);
  // bf16 arithmetic on FP8 weights: upstream's bf16 run is 0.023 from float64.
  EXPECT_LT(max_abs_diff((*out)[0], io.get("fwd.out_fp8")), 0.1);
}

// FLUX from its diffusers folder (linked together in `dir`), with FP8
// storage at `dtype`; float64 inputs must not change the output dtype.
torch::Tensor flux_forward_at(torch::ScalarType dtype, const TempDir& dir) {
  const std::string fixture = ::diffusiond::testing::fixtures_dir() + "/flux-tiny";
  std::filesystem::create_symlink(fixture + "/config.json", dir.path("config.json"));
  std::filesystem::create_symlink(fixture + "/transformer/diffusion_pytorch_model.safetensors",
                                  dir.path("diffusion_pytorch_model.safetensors"));
  LoadedModel m = load(dir.path(), dtype, /*fp8=*/true);
  if (!m.pin) return torch::Tensor();
  const auto* model = dynamic_cast<const FluxModel*>(&m.pin.as<diffusiond::LoadedModel>()->model());
  EXPECT_NE(model, nullptr);
  if (model == nullptr) return torch::Tensor();
  EXPECT_GT(model->weights().fp8_count(), 0);
  EXPECT_EQ(compute_dtype(*model), dtype);
  for (const std::string& name : model->weights().names()) {
    absl::StatusOr<torch::Tensor> t = model->weights().at_compute_dtype(name);
    EXPECT_TRUE(t.ok() && t->scalar_type() == dtype) << name;
  }
  TensorFile io(fixture + "/io.safetensors");
  FluxInputs in;
  in.hidden_states = io.get("fwd.hidden_states").to(torch::kFloat64);
  in.encoder_hidden_states = io.get("fwd.encoder_hidden_states").to(torch::kFloat64);
  in.pooled_projections = io.get("fwd.pooled_projections").to(torch::kFloat64);
  in.timestep = io.get("fwd.timestep").to(torch::kFloat64);
  in.img_ids = io.get("fwd.img_ids");
  in.txt_ids = io.get("fwd.txt_ids");
  if (model->config().guidance_embeds) in.guidance = io.get("fwd.guidance").to(torch::kFloat64);
  absl::StatusOr<torch::Tensor> out = model->forward(in);
  EXPECT_THAT(out, IsOk());
  if (!out.ok()) return torch::Tensor();
  EXPECT_EQ(out->scalar_type(), dtype);
  return *out - io.get("fwd.out_fp8");
}

TEST(ComputeDtype, FluxFp8RunsAtFloat32) {
  TempDir dir;
  const torch::Tensor diff = flux_forward_at(torch::kFloat32, dir);
  ASSERT_TRUE(diff.defined());
  EXPECT_LT(diff.abs().max().item<double>(), 1e-5);
}

TEST(ComputeDtype, FluxFp8RunsAtBfloat16) {
  TempDir dir;
  const torch::Tensor diff = flux_forward_at(torch::kBFloat16, dir);
  ASSERT_TRUE(diff.defined());
  // Upstream's bf16 run is 0.083 from float64 on this fixture.
  EXPECT_LT(diff.abs().max().item<double>(), 0.35);
}

}  // namespace
}  // namespace diffusiond
