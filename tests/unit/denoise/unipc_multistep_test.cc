// The UniPC solver against the loops upstream's WanPipeline ran with
// UniPCMultistepScheduler (the Wan fixtures' loop.*): its sigmas and integer
// timesteps from scheduler_config.json, each step from the guided velocity
// the scheduler received, and the whole denoise loop given the recorded
// predictions. Fixtures: DIFFUSIOND_WAN_FIXTURE (default wan-tiny) and
// DIFFUSIOND_WAN22_FIXTURE (default wan22-tiny, two experts).
#include "core/denoise/unipc_multistep.h"

#include <string>
#include <vector>

#include "core/denoise/denoise_loop.h"
#include "core/denoise/flow_match_schedule.h"
#include "core/denoise/scheduler_config.h"
#include "core/util/file_text.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/tensor_file.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;

// The fp32 noise floor of these loops is about 1e-6 (the fixtures' README).
constexpr double kUniPcTolerance = 1e-5;

struct UniPcFixture {
  const char* env;
  const char* name;
};

void PrintTo(const UniPcFixture& f, std::ostream* os) { *os << f.name; }

class UniPcLoop : public ::testing::TestWithParam<UniPcFixture> {
 protected:
  void SetUp() override {
    folder_ = ::diffusiond::testing::fixture_folder(GetParam().env, GetParam().name);
    io_ = std::make_unique<::diffusiond::testing::TensorFile>(folder_ + "/io.safetensors");
    const std::string path = folder_ + "/scheduler_config.json";
    absl::StatusOr<std::string> json = read_text_file(path);
    ASSERT_THAT(json, IsOk());
    absl::StatusOr<ScheduleOptions> options = parse_scheduler_config(*json, path, ScheduleOptions{});
    ASSERT_THAT(options, IsOk());
    options_ = *options;
    options_.steps = static_cast<int>(io_->get("loop.timesteps").numel());
  }

  torch::Tensor loop(const std::string& name) const { return io_->get("loop." + name).to(torch::kFloat32); }

  std::string folder_;
  std::unique_ptr<::diffusiond::testing::TensorFile> io_;
  ScheduleOptions options_;
};

TEST_P(UniPcLoop, SigmasAndIntegerTimestepsAreUpstreams) {
  EXPECT_EQ(options_.solver, FlowSolver::kUniPc);
  absl::StatusOr<Schedule> s = flow_match_schedule(options_);
  ASSERT_THAT(s, IsOk());
  const torch::Tensor sigmas = loop("sigmas"), timesteps = loop("timesteps");
  ASSERT_EQ(s->sigmas.size(), static_cast<size_t>(sigmas.numel()));
  for (int64_t i = 0; i < sigmas.numel(); ++i) EXPECT_EQ(s->sigmas[i], sigmas[i].item<float>()) << i;
  ASSERT_EQ(s->steps(), timesteps.numel());
  for (int i = 0; i < s->steps(); ++i) EXPECT_EQ(s->timesteps[i], timesteps[i].item<float>()) << i;
}

TEST_P(UniPcLoop, EachStepFromTheGuidedVelocityIsUpstreams) {
  absl::StatusOr<Schedule> s = flow_match_schedule(options_);
  ASSERT_THAT(s, IsOk());
  UniPcSolver solver(*s, options_.solver_order);
  const torch::Tensor guided = loop("guided"), expected = loop("latents");
  torch::Tensor latents = loop("noise")[0];
  for (int i = 0; i < s->steps(); ++i) {
    latents = solver.step(i, latents, guided[i]);
    EXPECT_LE((latents - expected[i]).abs().max().item<double>(), kUniPcTolerance) << "step " << i;
    latents = expected[i];  // each step from upstream's sample, so one miss does not hide the next
  }
}

TEST_P(UniPcLoop, TheDenoiseLoopGivesTheModelItsTimestepsAndEndsAtUpstreams) {
  const torch::Tensor guided = loop("guided"), model_t = loop("model_t"), model_in = loop("model_in");
  int step = 0;
  std::vector<float> times;
  const FlowPredictor recorded = [&](const torch::Tensor& latents, float t, bool) -> absl::StatusOr<FlowPrediction> {
    EXPECT_LE((latents - model_in[step]).abs().max().item<double>(), kUniPcTolerance) << "step " << step;
    times.push_back(t);
    FlowPrediction p;
    p.positive = guided[step++];
    return p;
  };
  DenoiseRequest r;
  r.initial_latents = loop("noise")[0];
  r.schedule = options_;
  absl::StatusOr<DenoiseResult> out = denoise(recorded, FlowConvention{1.0f, ModelTime::kTimestep}, r);
  ASSERT_THAT(out, IsOk());
  EXPECT_LE((out->latents - loop("final")[0]).abs().max().item<double>(), kUniPcTolerance);
  ASSERT_EQ(times.size(), static_cast<size_t>(model_t.numel()));
  for (size_t i = 0; i < times.size(); ++i) EXPECT_EQ(times[i], model_t[i].item<float>()) << i;
}

// A client's own sigmas may start at exactly 1, where UniPC's log-SNR is
// -inf: nudged as the solver's own schedule nudges its first sigma, the
// loop stays finite, and the timesteps are the solver's integers.
TEST(UniPcExplicitSigmas, AFirstSigmaOfOneIsNudgedAndTheLoopStaysFinite) {
  ScheduleOptions options;
  options.solver = FlowSolver::kUniPc;
  options.sigmas = {1.0f, 0.75f, 0.5f, 0.25f};
  absl::StatusOr<Schedule> schedule = flow_match_schedule(options);
  ASSERT_THAT(schedule, IsOk());
  EXPECT_EQ(schedule->sigmas, (std::vector<float>{static_cast<float>(1.0 - 1e-6), 0.75f, 0.5f, 0.25f, 0.0f}));
  EXPECT_EQ(schedule->timesteps, (std::vector<float>{999.0f, 750.0f, 500.0f, 250.0f}));
  const FlowPredictor half = [](const torch::Tensor& latents, float, bool) -> absl::StatusOr<FlowPrediction> {
    FlowPrediction p;
    p.positive = 0.5f * latents;
    return p;
  };
  DenoiseRequest r;
  r.initial_latents = torch::linspace(-1.0, 1.0, 16).reshape({4, 1, 2, 2});
  r.schedule = options;
  absl::StatusOr<DenoiseResult> out = denoise(half, FlowConvention{1.0f, ModelTime::kTimestep}, r);
  ASSERT_THAT(out, IsOk());
  EXPECT_TRUE(torch::isfinite(out->latents).all().item<bool>());
  options.sigmas = {1.0f, 1.0f};
  EXPECT_FALSE(flow_match_schedule(options).ok());
}

INSTANTIATE_TEST_SUITE_P(WanFixtures, UniPcLoop,
                         ::testing::Values(UniPcFixture{"DIFFUSIOND_WAN_FIXTURE", "wan-tiny"},
                                           UniPcFixture{"DIFFUSIOND_WAN22_FIXTURE", "wan22-tiny"}),
                         [](const ::testing::TestParamInfo<UniPcFixture>& info) {
                           return std::string(info.param.name == std::string("wan-tiny") ? "Wan" : "Wan22");
                         });

TEST(UniPcSchedulerConfig, SettingsTheSolverDoesNotRunAreRefusedNotIgnored) {
  const std::string base = R"({"_class_name": "UniPCMultistepScheduler", "prediction_type": "flow_prediction",
                               "use_flow_sigmas": true, "flow_shift": 5.0)";
  absl::StatusOr<ScheduleOptions> ok = parse_scheduler_config(base + "}", "s.json", ScheduleOptions{});
  ASSERT_THAT(ok, IsOk());
  EXPECT_EQ(ok->solver, FlowSolver::kUniPc);
  EXPECT_EQ(ok->shift, 5.0);
  EXPECT_FALSE(ok->dynamic_shift);
  for (const char* extra :
       {R"("solver_type": "bh1")", R"("prediction_type": "epsilon")", R"("use_flow_sigmas": false)",
        R"("solver_order": 3)", R"("predict_x0": false)", R"("use_dynamic_shifting": true)",
        R"("final_sigmas_type": "sigma_min")", R"("thresholding": true)", R"("disable_corrector": [1])",
        R"("lower_order_final": false)", R"("flow_shift": 0)", R"("use_karras_sigmas": true)"}) {
    EXPECT_THAT(parse_scheduler_config(base + ", " + extra + "}", "s.json", ScheduleOptions{}),
                ::diffusiond::testing::StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("s.json")))
        << extra;
  }
}

}  // namespace
}  // namespace diffusiond
