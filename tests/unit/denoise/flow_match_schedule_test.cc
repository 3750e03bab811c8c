#include "core/denoise/flow_match_schedule.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;

TEST(FlowMatchSchedule, StaticShiftEndsAtZero) {
  ScheduleOptions o;
  o.steps = 4;
  absl::StatusOr<Schedule> s = flow_match_schedule(o);
  ASSERT_THAT(s, IsOk());
  ASSERT_EQ(s->sigmas.size(), 5u);
  EXPECT_EQ(s->sigmas.front(), 1.0f);
  EXPECT_EQ(s->sigmas.back(), 0.0f);
  EXPECT_NEAR(s->sigmas[3], 3 * 0.25 / (1 + 2 * 0.25), 1e-7);
  EXPECT_EQ(s->timesteps[0], 1000.0f);  // the first step sees pure noise
}

TEST(FlowMatchSchedule, DynamicShiftGrowsWithResolution) {
  ScheduleOptions o;
  o.steps = 8;
  o.dynamic_shift = true;
  o.image_seq_len = 256;
  const Schedule low = *flow_match_schedule(o);
  o.image_seq_len = 4096;
  const Schedule high = *flow_match_schedule(o);
  const double e = std::exp(1.15);
  EXPECT_NEAR(high.sigmas[4], e / (e + (1 / 0.5 - 1)), 1e-6);  // s = 0.5 at step 4 of 8
  EXPECT_GT(high.sigmas[4], low.sigmas[4]);
}

// A fixed mu (Krea 2's distilled checkpoint) replaces the resolution's.
TEST(FlowMatchSchedule, FixedMuIgnoresResolution) {
  ScheduleOptions o;
  o.steps = 8;
  o.dynamic_shift = true;
  o.mu = 1.15;
  o.image_seq_len = 256;
  const Schedule low = *flow_match_schedule(o);
  o.image_seq_len = 4096;
  const Schedule high = *flow_match_schedule(o);
  EXPECT_EQ(low.sigmas, high.sigmas);
  const double e = std::exp(1.15);
  EXPECT_NEAR(low.sigmas[4], e / (e + (1 / 0.5 - 1)), 1e-6);
}

TEST(FlowMatchSchedule, ExplicitSigmasAreUsedAsGiven) {
  ScheduleOptions o;
  o.sigmas = {1.0f, 0.5f, 0.1f};
  absl::StatusOr<Schedule> s = flow_match_schedule(o);
  ASSERT_THAT(s, IsOk());
  EXPECT_THAT(s->sigmas, ::testing::ElementsAre(1.0f, 0.5f, 0.1f, 0.0f));
  EXPECT_EQ(s->steps(), 3);
}

TEST(FlowMatchSchedule, BadInputIsNamed) {
  ScheduleOptions o;
  o.steps = 0;
  EXPECT_THAT(flow_match_schedule(o), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("steps is 0")));
  o.steps = 4;
  o.shift = -1;
  EXPECT_THAT(flow_match_schedule(o), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("shift")));
  o.sigmas = {0.5f, 0.7f};
  EXPECT_THAT(flow_match_schedule(o), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("sigma 1")));
}

}  // namespace
}  // namespace diffusiond
