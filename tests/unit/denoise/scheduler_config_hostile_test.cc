// Hostile scheduler_config.json values: numbers far out of range, floats
// where integers belong, and wrong types (where strings belong too) are
// refused naming the field.
#include <string>

#include "core/denoise/scheduler_config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

absl::StatusOr<ScheduleOptions> parse(const std::string& json) {
  return parse_scheduler_config(json, "s.json", ScheduleOptions{});
}

TEST(SchedulerConfigHostile, OutOfRangeAndMistypedFieldsAreRefused) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"shift": 1e300})", "\"shift\" is 1e+300, expected"},
      {R"({"base_shift": -1e9})", "\"base_shift\" is -1000000000.0, expected"},
      {R"({"max_shift": 1e300})", "\"max_shift\" is 1e+300"},
      {R"({"base_image_seq_len": 1e300})", "\"base_image_seq_len\" must be an integer"},
      {R"({"max_image_seq_len": 2.5})", "\"max_image_seq_len\" must be an integer"},
      {R"({"max_image_seq_len": -4096})", "\"max_image_seq_len\" is -4096, expected 1 to"},
      {R"({"base_image_seq_len": 99999999999999})", "\"base_image_seq_len\" is 99999999999999"},
      {R"({"use_dynamic_shifting": "yes"})", "\"use_dynamic_shifting\" must be a boolean"},
      // Found by tests/fuzz/config_fuzz.cc: these threw out of the parser.
      {R"({"_class_name": [8, 16]})", "field '_class_name' is [8,16], expected a string"},
      {R"({"time_shift_type": 5})", "field 'time_shift_type' is 5, expected a string"},
  };
  for (const auto& [json, message] : cases) {
    EXPECT_THAT(parse(json).status(),
                StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("s.json"), HasSubstr(message))))
        << json;
  }
}

TEST(SchedulerConfigHostile, RealSchedulersStillParse) {
  EXPECT_THAT(parse(R"({"shift": 3.0, "use_dynamic_shifting": false})").status(), IsOk());
  EXPECT_THAT(parse(R"({"use_dynamic_shifting": true, "base_shift": 0.5, "max_shift": 1.15,
                        "base_image_seq_len": 256, "max_image_seq_len": 4096})")
                  .status(),
              IsOk());
}

}  // namespace
}  // namespace diffusiond
