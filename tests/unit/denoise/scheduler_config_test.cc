// scheduler_config.json: the fields read over an architecture's defaults,
// the settings refused, and the schedules they give (FLUX.1-schnell's
// unshifted one, FLUX.1-dev's resolution-dependent one).
#include "core/denoise/scheduler_config.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(SchedulerConfig, ReadsItsFieldsOverTheDefaults) {
  ScheduleOptions defaults;
  defaults.steps = 9;
  defaults.float64_linspace = true;
  absl::StatusOr<ScheduleOptions> o = parse_scheduler_config(
      R"({"_class_name": "FlowMatchEulerDiscreteScheduler", "use_dynamic_shifting": true, "base_shift": 0.4,
          "max_shift": 1.2, "base_image_seq_len": 128, "max_image_seq_len": 8192, "shift": 2.0,
          "num_train_timesteps": 1000, "shift_terminal": null})",
      "s.json", defaults);
  ASSERT_THAT(o, IsOk());
  EXPECT_TRUE(o->dynamic_shift);
  EXPECT_EQ(o->base_shift, 0.4);
  EXPECT_EQ(o->max_shift, 1.2);
  EXPECT_EQ(o->base_seq_len, 128);
  EXPECT_EQ(o->max_seq_len, 8192);
  EXPECT_EQ(o->shift, 2.0);
  EXPECT_EQ(o->steps, 9);  // not the config's to say
  EXPECT_TRUE(o->float64_linspace);
}

// Qwen-Image-Lightning's scheduler over Qwen-Image's defaults (shift_terminal
// 0.02): what the file leaves out or nulls is upstream's class default.
TEST(SchedulerConfig, FieldsLeftOutOrNullAreUpstreamsClassDefaultsNotTheModels) {
  ScheduleOptions defaults;
  defaults.shift_terminal = 0.02;
  defaults.dynamic_shift = true;
  defaults.base_shift = 0.5;
  defaults.max_shift = 0.9;
  defaults.max_seq_len = 8192;
  defaults.shift = 3.0;
  absl::StatusOr<ScheduleOptions> o = parse_scheduler_config(
      R"({"use_dynamic_shifting": true, "base_shift": 1.0986122886681098, "max_shift": 1.0986122886681098,
          "shift_terminal": null})",
      "s.json", defaults);
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->shift_terminal, 0.0);
  EXPECT_EQ(o->max_seq_len, 4096);
  EXPECT_EQ(o->shift, 1.0);
  o = parse_scheduler_config("{}", "s.json", defaults);
  ASSERT_THAT(o, IsOk());
  EXPECT_FALSE(o->dynamic_shift);
  EXPECT_EQ(o->max_shift, 1.15);
  EXPECT_EQ(o->shift_terminal, 0.0);
}

TEST(SchedulerConfig, SchnellIsUnshifted) {
  ScheduleOptions defaults;
  defaults.float64_linspace = true;
  absl::StatusOr<ScheduleOptions> o =
      parse_scheduler_config(R"({"shift": 1.0, "use_dynamic_shifting": false})", "s.json", defaults);
  ASSERT_THAT(o, IsOk());
  o->steps = 4;
  absl::StatusOr<Schedule> s = flow_match_schedule(*o);
  ASSERT_THAT(s, IsOk());
  EXPECT_THAT(s->sigmas, ElementsAre(1.0f, 0.75f, 0.5f, 0.25f, 0.0f));
  EXPECT_THAT(s->timesteps, ElementsAre(1000.0f, 750.0f, 500.0f, 250.0f));
}

TEST(SchedulerConfig, DynamicShiftGrowsWithTheImage) {
  absl::StatusOr<ScheduleOptions> o = parse_scheduler_config(
      R"({"use_dynamic_shifting": true, "base_shift": 0.5, "max_shift": 1.15})", "s.json", ScheduleOptions());
  ASSERT_THAT(o, IsOk());
  o->steps = 4;
  o->image_seq_len = 256;
  absl::StatusOr<Schedule> small = flow_match_schedule(*o);
  o->image_seq_len = 4096;
  absl::StatusOr<Schedule> large = flow_match_schedule(*o);
  ASSERT_THAT(small, IsOk());
  ASSERT_THAT(large, IsOk());
  EXPECT_EQ(small->sigmas[0], 1.0f);
  EXPECT_GT(large->sigmas[2], small->sigmas[2]);
}

TEST(SchedulerConfig, ReadsShiftTerminalAndTheScheduleEndsThere) {
  absl::StatusOr<ScheduleOptions> o =
      parse_scheduler_config(R"({"use_dynamic_shifting": true, "shift_terminal": 0.02})", "s.json", ScheduleOptions());
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->shift_terminal, 0.02);
  o->steps = 4;
  o->image_seq_len = 1024;
  absl::StatusOr<Schedule> s = flow_match_schedule(*o);
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->sigmas[0], 1.0f);
  EXPECT_NEAR(s->sigmas[3], 0.02f, 1e-7);
  EXPECT_EQ(s->sigmas[4], 0.0f);
}

TEST(SchedulerConfig, RefusesWhatTheLoopDoesNotImplement) {
  const auto parse = [](const char* json) { return parse_scheduler_config(json, "s.json", ScheduleOptions()); };
  EXPECT_THAT(parse(R"({"use_karras_sigmas": true})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("s.json: \"use_karras_sigmas\": true")));
  EXPECT_THAT(parse(R"({"invert_sigmas": true})"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("s.json")));
  EXPECT_THAT(parse(R"({"shift_terminal": 1.0})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("shift_terminal")));
  EXPECT_THAT(parse(R"({"time_shift_type": "linear"})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("exponential")));
  EXPECT_THAT(parse(R"({"num_train_timesteps": 500})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("num_train_timesteps")));
  EXPECT_THAT(parse(R"({"shift": "3"})"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"shift\" must be a number")));
  EXPECT_THAT(parse(R"({"shift": 0})"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("shift is 0")));
  EXPECT_THAT(parse(R"({"_class_name": "EulerDiscreteScheduler"})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"EulerDiscreteScheduler\" is not supported")));
  EXPECT_THAT(parse("[1]"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected a JSON object")));
  EXPECT_THAT(parse("{"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("s.json")));
}

}  // namespace
}  // namespace diffusiond
