// Parity of the Z-Image port with upstream diffusers, on the reference
// fixture (DIFFUSIOND_ZIMAGE_FIXTURE, default the shared zimage-tiny): the
// single and batched forwards, the FP8-storage forwards and the 4-step loops
// with and without guidance, loaded from each of the three weight files.
//
// Tolerance: 1e-5 absolute. The fixture's float32 noise floor (a float64
// run against the float32 one) is ~1e-6 on outputs of magnitude ~2-5; ten
// times that allows for a different summation order in libtorch's kernels
// (matmul blocking, fused ops) while any real mistake — a wrong sign, eps,
// RoPE pairing or padding id — moves outputs by 1e-3 or more.
#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/models/model_loader.h"
#include "core/util/file_text.h"
#include "core/util/json.h"
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
using ::diffusiond::testing::TensorFile;

constexpr double kZImageTolerance = 1e-5;

std::string z_image_fixture() { return ::diffusiond::testing::fixture_folder("DIFFUSIOND_ZIMAGE_FIXTURE", "zimage-tiny"); }

// The static shift of the fixture's scheduler_config.json (3.0 in zimage-tiny).
double fixture_shift() {
  absl::StatusOr<std::string> text = read_text_file(z_image_fixture() + "/scheduler_config.json");
  EXPECT_THAT(text, IsOk());
  absl::StatusOr<nlohmann::json> config = parse_json_strict(text.ok() ? *text : "{}", "scheduler_config.json");
  EXPECT_THAT(config, IsOk());
  EXPECT_FALSE(config.ok() && config->value("use_dynamic_shifting", false))
      << "the parity test replays static-shift schedules only";
  return config.ok() ? config->value("shift", 1.0) : 1.0;
}

enum class ZImageSource { kDiffusersFolder, kSingleFile, kScaledFp8File };

void PrintTo(ZImageSource s, std::ostream* os) {
  *os << (s == ZImageSource::kDiffusersFolder ? "diffusers folder" : s == ZImageSource::kSingleFile ? "single file" : "scaled fp8");
}

class ZImageParity : public ::testing::TestWithParam<ZImageSource> {
 protected:
  // The fixture keeps config.json beside transformer/; a diffusers model
  // folder has them together, so the test lays one out with links.
  std::string path_for(ZImageSource source) {
    const std::string dir = z_image_fixture();
    switch (source) {
      case ZImageSource::kDiffusersFolder:
        std::filesystem::create_symlink(dir + "/config.json", tmp_.path("config.json"));
        std::filesystem::create_symlink(dir + "/transformer/diffusion_pytorch_model.safetensors",
                                        tmp_.path("diffusion_pytorch_model.safetensors"));
        return tmp_.path();
      case ZImageSource::kSingleFile: return dir + "/single_file.safetensors";
      case ZImageSource::kScaledFp8File: return dir + "/single_file_scaled_fp8.safetensors";
    }
    return "";
  }

  LoadedModel load(ZImageSource source, bool fp8_storage, torch::ScalarType compute_dtype = torch::kFloat32) {
    ModelLoadOptions options;
    options.compute_dtype = compute_dtype;
    if (fp8_storage) options.fp8.format = Fp8Format::kE4M3Fn;
    // A single file's RoPE split is not in its shapes: name the fixture's config.json.
    return load_test_model(path_for(source), options,
                           source == ZImageSource::kDiffusersFolder ? "" : z_image_fixture() + "/config.json");
  }

  testing::TempDir tmp_;
  TensorFile io_{z_image_fixture() + "/io.safetensors"};
};

torch::Tensor single_forward(const ZImageModel& model, const TensorFile& io) {
  absl::StatusOr<std::vector<torch::Tensor>> out =
      model.forward({io.get("fwd.x")}, io.get("fwd.t"), {io.get("fwd.cap_feats")});
  EXPECT_THAT(out, IsOk());
  return out.ok() ? (*out)[0] : torch::Tensor();
}

TEST_P(ZImageParity, SingleForward) {
  LoadedModel l = load(GetParam(), /*fp8_storage=*/false);
  ASSERT_NE(l.model, nullptr);
  const char* expected = GetParam() == ZImageSource::kScaledFp8File ? "fwd.out_fp8_scaled" : "fwd.out";
  const double diff = max_abs_diff(single_forward(*l.model, io_), io_.get(expected));
  std::printf("single forward vs %s: max abs diff %.3g\n", expected, diff);
  EXPECT_LT(diff, kZImageTolerance);
}

// bfloat16 compute on the CPU (what --compute_dtype bfloat16 or auto runs
// on CPUs with native bf16): the fixture's bfloat16 run (fwd.out_bf16;
// stats.json fwd_bf16 is its distance from float64) is informative only, so
// ours must stay within a few times that distance of the float64 forward.
TEST_P(ZImageParity, Bfloat16ForwardStaysNearUpstreams) {
  if (GetParam() == ZImageSource::kScaledFp8File) GTEST_SKIP() << "the fixture's bfloat16 run used the bf16 weights";
  LoadedModel l = load(GetParam(), /*fp8_storage=*/false, torch::kBFloat16);
  ASSERT_NE(l.model, nullptr);
  const torch::Tensor out = single_forward(*l.model, io_);
  ASSERT_TRUE(out.defined());
  EXPECT_EQ(out.scalar_type(), torch::kBFloat16);
  const double upstream = testing::read_json_file(z_image_fixture() + "/stats.json").at("fwd_bf16").get<double>();
  const double diff = max_abs_diff(out, io_.get("fwd.out_f64"));
  std::printf("bfloat16 forward vs fwd.out_f64: %.3g (upstream's bfloat16: %.3g, vs ours %.3g)\n", diff, upstream,
              max_abs_diff(out, io_.get("fwd.out_bf16")));
  EXPECT_LT(diff, 3 * upstream);
}

TEST_P(ZImageParity, BatchedForwardWithDifferentCaptionLengths) {
  LoadedModel l = load(GetParam(), false);
  ASSERT_NE(l.model, nullptr);
  if (GetParam() == ZImageSource::kScaledFp8File) GTEST_SKIP() << "the fixture has no scaled-fp8 batch output";
  const torch::Tensor x = io_.get("batch.x");
  absl::StatusOr<std::vector<torch::Tensor>> out = l.model->forward(
      {x[0], x[1]}, io_.get("batch.t"), {io_.get("batch.cap_feats_0"), io_.get("batch.cap_feats_1")});
  ASSERT_THAT(out, IsOk());
  const torch::Tensor expected = io_.get("batch.out");
  const double diff = std::max(max_abs_diff((*out)[0], expected[0]), max_abs_diff((*out)[1], expected[1]));
  std::printf("batched forward: max abs diff %.3g\n", diff);
  EXPECT_LT(diff, kZImageTolerance);
}

TEST_P(ZImageParity, Fp8StorageForward) {
  if (GetParam() == ZImageSource::kScaledFp8File) GTEST_SKIP() << "already FP8: see SingleForward";
  LoadedModel l = load(GetParam(), /*fp8_storage=*/true);
  ASSERT_NE(l.model, nullptr);
  const double diff = max_abs_diff(single_forward(*l.model, io_), io_.get("fwd.out_fp8"));
  std::printf("FP8-storage forward vs fwd.out_fp8: max abs diff %.3g\n", diff);
  EXPECT_LT(diff, kZImageTolerance);
}

// Runs the fixture's 4-step loop `prefix` ("nocfg" or "cfg") and compares
// the schedule, every step's latents and the final latents.
void expect_loop_parity(const ZImageModel& model, const TensorFile& io, const std::string& prefix) {
  const bool cfg = prefix == "cfg";
  const float upstream_g = io.get(prefix + ".guidance_scale").item<float>();
  DenoiseRequest request;
  request.initial_latents = io.get(prefix + ".noise")[0];
  request.schedule.steps = static_cast<int>(io.get(prefix + ".timesteps").numel());
  request.schedule.shift = fixture_shift();
  request.guidance_scale = upstream_g + 1.0;  // upstream g is s - 1
  request.has_negative = cfg;
  Conditioning positive, negative;
  positive.tensors["cap_feats"] = io.get(prefix + ".cap_feats");
  negative.tensors["cap_feats"] = io.get("cfg.neg_cap_feats");
  absl::StatusOr<FlowPredictor> predict = model.flow_predictor(positive, cfg ? &negative : nullptr);
  ASSERT_THAT(predict, IsOk());
  int events = 0;
  DenoiseOptions options;
  options.keep_history = true;
  options.on_step = [&](const StepEvent& e) { EXPECT_EQ(e.step, ++events); };
  absl::StatusOr<DenoiseResult> r = denoise(*predict, model.flow_convention(), request, options);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(events, request.schedule.steps);
  const torch::Tensor sigmas = torch::tensor(r->schedule.sigmas);
  EXPECT_EQ(max_abs_diff(sigmas, io.get(prefix + ".sigmas")), 0.0) << "schedule";
  EXPECT_EQ(max_abs_diff(torch::tensor(r->schedule.timesteps), io.get(prefix + ".timesteps")), 0.0);
  const torch::Tensor model_t = io.get(prefix + ".model_t");
  for (int i = 0; i < request.schedule.steps; ++i) {
    EXPECT_EQ(model_time(model.flow_convention().time, r->schedule.timesteps[i]), model_t[i].item<float>())
        << "step " << i;
  }
  const double steps_diff = max_abs_diff(torch::stack(r->history), io.get(prefix + ".latents"));
  const double final_diff = max_abs_diff(r->latents, io.get(prefix + ".final")[0]);
  std::printf("%s loop: max abs diff per step %.3g, final %.3g\n", prefix.c_str(), steps_diff, final_diff);
  EXPECT_LT(steps_diff, kZImageTolerance);
  EXPECT_LT(final_diff, kZImageTolerance);
}

TEST_P(ZImageParity, FourStepLoopWithoutGuidance) {
  if (GetParam() == ZImageSource::kScaledFp8File) GTEST_SKIP() << "the fixture's loops ran the bf16 weights";
  LoadedModel l = load(GetParam(), false);
  ASSERT_NE(l.model, nullptr);
  expect_loop_parity(*l.model, io_, "nocfg");
}

TEST_P(ZImageParity, FourStepLoopWithGuidance) {
  if (GetParam() == ZImageSource::kScaledFp8File) GTEST_SKIP() << "the fixture's loops ran the bf16 weights";
  LoadedModel l = load(GetParam(), false);
  ASSERT_NE(l.model, nullptr);
  expect_loop_parity(*l.model, io_, "cfg");
}

INSTANTIATE_TEST_SUITE_P(Sources, ZImageParity,
                         ::testing::Values(ZImageSource::kDiffusersFolder, ZImageSource::kSingleFile,
                                           ZImageSource::kScaledFp8File),
                         [](const auto& info) {
                           return info.param == ZImageSource::kDiffusersFolder ? "DiffusersFolder"
                                  : info.param == ZImageSource::kSingleFile    ? "SingleFile"
                                                                          : "ScaledFp8File";
                         });

}  // namespace
}  // namespace diffusiond
