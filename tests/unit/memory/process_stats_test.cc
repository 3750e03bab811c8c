#include "core/memory/process_stats.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;

// A real line whose command name holds a space and a parenthesis.
constexpr char kStat[] =
    "4242 (diffusiond (x) a) S 1 4242 4242 0 -1 4194560 2000 0 0 0 250 50 0 0 20 0 "
    "17 0 12345 1000000 5000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";

TEST(ParseProcStat, ReadsCpuThreadsAndStartTime) {
  absl::StatusOr<ProcessStats> s = parse_proc_stat(kStat, 100, 1'700'000'000);
  ASSERT_THAT(s, IsOk());
  EXPECT_DOUBLE_EQ(s->cpu_seconds, 3.0);  // (250 + 50) ticks at 100 Hz
  EXPECT_EQ(s->threads, 17);
  EXPECT_DOUBLE_EQ(s->start_time_seconds, 1'700'000'000 + 123.45);
}

TEST(ParseProcStat, MalformedLinesAreErrors) {
  EXPECT_THAT(parse_proc_stat("no parens here", 100, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("parentheses")));
  EXPECT_THAT(parse_proc_stat("1 (x) S 1 2", 100, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fields")));
}

TEST(ReadProcessStats, ReadsThisProcess) {
  absl::StatusOr<ProcessStats> s = read_process_stats();
  ASSERT_THAT(s, IsOk());
  EXPECT_GE(s->threads, 1);
  EXPECT_GE(s->open_fds, 3);  // stdin, stdout, stderr
  EXPECT_GT(s->start_time_seconds, 1.5e9);
}

}  // namespace
}  // namespace diffusiond
