#include "core/denoise/denoise_loop.h"

#include <torch/utils.h>

#include <atomic>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;

// A "model" that predicts a constant, so the Euler updates are checkable.
FlowPredictor constant(float pos, float neg, int* calls, std::vector<bool>* negatives) {
  return [=](const torch::Tensor& latents, float, bool with_negative) -> absl::StatusOr<FlowPrediction> {
    ++*calls;
    negatives->push_back(with_negative);
    FlowPrediction p;
    p.positive = torch::full_like(latents, pos);
    if (with_negative) p.negative = torch::full_like(latents, neg);
    return p;
  };
}

constexpr FlowConvention kNegated = {-1.0f, ModelTime::kOneMinusSigma};

TEST(Denoise, EulerStepsIntegrateTheNegatedPrediction) {
  int calls = 0;
  std::vector<bool> negatives;
  DenoiseRequest r;
  r.initial_latents = torch::zeros({2, 2, 2});
  r.schedule.sigmas = {1.0f, 0.5f};
  absl::StatusOr<DenoiseResult> out = denoise(constant(2.0f, 0.0f, &calls, &negatives), kNegated, r);
  ASSERT_THAT(out, IsOk());
  // latents += (sigma_next - sigma) * (-pred): (0.5 - 1)(-2) + (0 - 0.5)(-2) = 2.
  EXPECT_FLOAT_EQ(out->latents[0][0][0].item<float>(), 2.0f);
  EXPECT_EQ(calls, 2);
  EXPECT_THAT(negatives, ::testing::ElementsAre(false, false));
}

TEST(Denoise, StandardGuidanceScale) {
  int calls = 0;
  std::vector<bool> negatives;
  DenoiseRequest r;
  r.initial_latents = torch::zeros({1, 1, 1});
  r.schedule.sigmas = {1.0f};
  r.guidance_scale = 3.0;  // neg + 3 (pos - neg) = 1 + 3 * 2 = 7
  r.has_negative = true;
  absl::StatusOr<DenoiseResult> out = denoise(constant(3.0f, 1.0f, &calls, &negatives), kNegated, r);
  ASSERT_THAT(out, IsOk());
  EXPECT_FLOAT_EQ(out->latents.item<float>(), 7.0f);
  EXPECT_THAT(negatives, ::testing::ElementsAre(true));
}

TEST(Denoise, GuidanceWithoutNegativeIsRejected) {
  DenoiseRequest r;
  r.latent_shape = {1, 2, 2};
  r.guidance_scale = 2.0;
  int calls = 0;
  std::vector<bool> negatives;
  EXPECT_THAT(denoise(constant(0, 0, &calls, &negatives), kNegated, r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("needs negative conditioning")));
}

TEST(Denoise, CancelsBetweenSteps) {
  CancellationSource cancel;
  DenoiseOptions options;
  options.cancel = cancel.token();
  options.on_step = [&](const StepEvent& e) { if (e.step == 2) cancel.cancel(); };
  DenoiseRequest r;
  r.latent_shape = {1, 2, 2};
  r.schedule.steps = 5;
  int calls = 0;
  std::vector<bool> negatives;
  EXPECT_THAT(denoise(constant(1, 0, &calls, &negatives), kNegated, r, options),
              StatusIs(absl::StatusCode::kCancelled, HasSubstr("after 2 of 5 steps")));
  EXPECT_EQ(calls, 2);
}

TEST(Denoise, TheConventionSetsTheSignAndTheModelTime) {
  std::vector<float> times;
  const FlowPredictor record = [&](const torch::Tensor& latents, float t, bool) -> absl::StatusOr<FlowPrediction> {
    times.push_back(t);
    FlowPrediction p;
    p.positive = torch::full_like(latents, 2.0f);
    return p;
  };
  DenoiseRequest r;
  r.initial_latents = torch::zeros({1, 1, 1});
  r.schedule.sigmas = {1.0f, 0.25f};
  absl::StatusOr<DenoiseResult> velocity = denoise(record, {1.0f, ModelTime::kSigma}, r);
  ASSERT_THAT(velocity, IsOk());
  // latents += (sigma_next - sigma) * pred: (0.25 - 1) 2 + (0 - 0.25) 2 = -2.
  EXPECT_FLOAT_EQ(velocity->latents.item<float>(), -2.0f);
  EXPECT_THAT(times, ::testing::ElementsAre(1.0f, 0.25f));
  times.clear();
  ASSERT_THAT(denoise(record, kNegated, r), IsOk());
  EXPECT_THAT(times, ::testing::ElementsAre(0.0f, 0.75f));
}

// Two segments of one run, as Wan 2.2's two experts: the second takes over
// below its boundary with its own guidance, and the latents carry over.
TEST(DenoiseRun, SegmentsRunTheirStepsWithTheirOwnPredictorAndGuidance) {
  int first_calls = 0, second_calls = 0;
  std::vector<bool> first_negatives, second_negatives;
  DenoiseRequest r;
  r.initial_latents = torch::zeros({1, 1, 1});
  r.schedule.sigmas = {1.0f, 0.75f, 0.5f, 0.25f};  // timesteps 1000, 750, 500, 250
  r.has_negative = true;
  DenoiseOptions options;
  std::vector<int> segments;
  options.on_step = [&](const StepEvent& e) { segments.push_back(e.segment); };
  absl::StatusOr<DenoiseRun> run = DenoiseRun::start({1.0f, ModelTime::kSigma}, r);
  ASSERT_THAT(run, IsOk());
  const int boundary = first_step_below(run->schedule(), 600, 0);  // steps at 500 and 250 run the second
  EXPECT_EQ(boundary, 2);
  EXPECT_EQ(first_step_below(run->schedule(), 250, 0), 4);  // none below: the segment has no steps
  EXPECT_EQ(first_step_below(run->schedule(), 2000, 3), 3);
  // first: 1 + 3 (2 - 1) = 4; second: unguided, its positive 10.
  ASSERT_THAT(run->run(constant(2.0f, 1.0f, &first_calls, &first_negatives), 3.0, boundary, 0, options), IsOk());
  EXPECT_EQ(run->steps_done(), 2);
  EXPECT_FALSE(run->done());
  EXPECT_THAT(run->run(constant(0, 0, &second_calls, &second_negatives), 1.0, boundary, 1, options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must end after step 2")));
  ASSERT_THAT(run->run(constant(10.0f, 0.0f, &second_calls, &second_negatives), 1.0, 4, 1, options), IsOk());
  ASSERT_TRUE(run->done());
  EXPECT_EQ(first_calls, 2);
  EXPECT_EQ(second_calls, 2);
  EXPECT_THAT(first_negatives, ::testing::ElementsAre(true, true));
  EXPECT_THAT(second_negatives, ::testing::ElementsAre(false, false));
  EXPECT_THAT(segments, ::testing::ElementsAre(0, 0, 1, 1));
  // (0.75 - 1) 4 + (0.5 - 0.75) 4 + (0.25 - 0.5) 10 + (0 - 0.25) 10 = -7.
  EXPECT_FLOAT_EQ(std::move(*run).finish().latents.item<float>(), -7.0f);
}

// A UniPC run split in two segments of the same predictor gives the
// unsplit run's latents bit for bit: the solver's history carries over.
TEST(DenoiseRun, ASplitUniPcRunEqualsTheWholeRun) {
  const FlowPredictor predict = [](const torch::Tensor& latents, float t, bool) -> absl::StatusOr<FlowPrediction> {
    FlowPrediction p;
    p.positive = latents * 0.5f + t * 1e-3f;
    return p;
  };
  DenoiseRequest r;
  r.latent_shape = {2, 3, 4};
  r.seed = 7;
  r.schedule.solver = FlowSolver::kUniPc;
  r.schedule.steps = 6;
  const FlowConvention convention = {-1.0f, ModelTime::kSigma};
  absl::StatusOr<DenoiseResult> whole = denoise(predict, convention, r);
  ASSERT_THAT(whole, IsOk());
  absl::StatusOr<DenoiseRun> split = DenoiseRun::start(convention, r);
  ASSERT_THAT(split, IsOk());
  ASSERT_THAT(split->run(predict, 1.0, 3, 0, {}), IsOk());
  ASSERT_THAT(split->run(predict, 1.0, 6, 1, {}), IsOk());
  EXPECT_TRUE(torch::equal(std::move(*split).finish().latents, whole->latents));
}

// Qwen-Image's true CFG: comb = neg + s·(pos − neg), scaled per token (all
// channels of a 2x2 patch) to the positive's norm. One step from σ = 1 to 0
// leaves latents = −guided.
TEST(Denoise, NormRescaledGuidanceKeepsThePositiveNormPerPatch) {
  const torch::Tensor pos = torch::arange(1, 33, torch::kFloat32).reshape({2, 4, 4}).sin();
  const torch::Tensor neg = torch::arange(1, 33, torch::kFloat32).reshape({2, 4, 4}).cos();
  const FlowPredictor predict = [&](const torch::Tensor&, float, bool with_negative) -> absl::StatusOr<FlowPrediction> {
    FlowPrediction p;
    p.positive = pos;
    if (with_negative) p.negative = neg;
    return p;
  };
  DenoiseRequest r;
  r.initial_latents = torch::zeros({2, 4, 4});
  r.schedule.sigmas = {1.0f};
  r.guidance_scale = 3.0;
  r.has_negative = true;
  FlowConvention convention;
  convention.guidance_norm_patch = 2;
  absl::StatusOr<DenoiseResult> out = denoise(predict, convention, r);
  ASSERT_THAT(out, IsOk());
  const torch::Tensor comb = neg + 3.0f * (pos - neg);
  torch::Tensor expected = torch::empty_like(comb);
  for (int64_t y = 0; y < 4; y += 2) {
    for (int64_t x = 0; x < 4; x += 2) {
      const auto block = [&](const torch::Tensor& t) { return t.narrow(1, y, 2).narrow(2, x, 2); };
      block(expected).copy_(block(comb) * (block(pos).norm() / block(comb).norm()));
    }
  }
  EXPECT_TRUE(torch::allclose(out->latents, -expected, 1e-6, 1e-6));
  // The per-patch norms are the positive's, not one norm over the latent.
  EXPECT_FALSE(torch::allclose(out->latents, -comb * (pos.norm() / comb.norm()), 1e-4, 1e-4));

  r.initial_latents = torch::zeros({2, 4, 3});
  EXPECT_THAT(denoise(predict, convention, r), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("2x2")));
}

TEST(SeededNoise, IsDeterministicAndMatchesTorchRandn) {
  const torch::Tensor a = seeded_noise({4, 8, 8}, 1234), b = seeded_noise({4, 8, 8}, 1234);
  EXPECT_TRUE(torch::equal(a, b));
  EXPECT_FALSE(torch::equal(a, seeded_noise({4, 8, 8}, 1235)));
  torch::manual_seed(1234);  // the default generator, seeded the same way
  EXPECT_TRUE(torch::equal(a, torch::randn({4, 8, 8})));
}

}  // namespace
}  // namespace diffusiond
