// FLUX's scheduler config and schedule: the fields read, the settings
// refused, and the static (schnell) and dynamic (dev) shifts.
#include "core/models/flux/flux_schedule.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(FluxSchedule, SchnellIsUnshifted) {
  absl::StatusOr<FluxSchedulerConfig> c =
      parse_flux_scheduler_config(R"({"shift": 1.0, "use_dynamic_shifting": false})", "s.json");
  ASSERT_THAT(c, IsOk());
  absl::StatusOr<Schedule> s = flux_schedule(*c, 4, 4096);
  ASSERT_THAT(s, IsOk());
  EXPECT_THAT(s->sigmas, ElementsAre(1.0f, 0.75f, 0.5f, 0.25f, 0.0f));
  EXPECT_THAT(s->timesteps, ElementsAre(1000.0f, 750.0f, 500.0f, 250.0f));
  EXPECT_EQ(flux_model_time(*s, 1), 0.75f);
}

TEST(FluxSchedule, DynamicShiftGrowsWithTheImage) {
  absl::StatusOr<FluxSchedulerConfig> c = parse_flux_scheduler_config(
      R"({"use_dynamic_shifting": true, "base_shift": 0.5, "max_shift": 1.15})", "s.json");
  ASSERT_THAT(c, IsOk());
  EXPECT_DOUBLE_EQ(flux_mu(*c, 256), 0.5);
  EXPECT_DOUBLE_EQ(flux_mu(*c, 4096), 1.15);
  absl::StatusOr<Schedule> small = flux_schedule(*c, 4, 256), large = flux_schedule(*c, 4, 4096);
  ASSERT_THAT(small, IsOk());
  ASSERT_THAT(large, IsOk());
  EXPECT_EQ(small->sigmas[0], 1.0f);
  EXPECT_GT(large->sigmas[2], small->sigmas[2]);
}

TEST(FluxSchedule, RefusesWhatItDoesNotImplement) {
  EXPECT_THAT(parse_flux_scheduler_config(R"({"use_karras_sigmas": true})", "s.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'use_karras_sigmas' is true, expected false")));
  EXPECT_THAT(parse_flux_scheduler_config(R"({"shift_terminal": 0.02})", "s.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'shift_terminal' is 0.02, expected null")));
  EXPECT_THAT(parse_flux_scheduler_config(R"({"time_shift_type": "linear"})", "s.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected \"exponential\"")));
  EXPECT_THAT(parse_flux_scheduler_config(R"({"num_train_timesteps": 500})", "s.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'num_train_timesteps' is 500")));
  EXPECT_THAT(parse_flux_scheduler_config(R"({"shift": "3"})", "s.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'shift' is \"3\", expected a number")));
  EXPECT_THAT(flux_schedule(FluxSchedulerConfig(), 0, 64),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("steps is 0")));
}

}  // namespace
}  // namespace diffusiond
