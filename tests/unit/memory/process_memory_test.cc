#include "core/memory/process_memory.h"

#include <cstring>
#include <memory>

#include "core/util/bytes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kStatus[] =
    "Name:\tdiffusiond\nVmPeak:\t  900000 kB\nVmSize:\t  800000 kB\n"
    "VmHWM:\t  300000 kB\nVmRSS:\t  250000 kB\nThreads:\t4\n";

TEST(ParseProcStatus, ReadsRssPeakAndVirtualSize) {
  absl::StatusOr<ProcessMemory> m = parse_proc_status(kStatus);
  ASSERT_THAT(m, IsOk());
  EXPECT_EQ(m->rss_bytes, 250000 * 1024);
  EXPECT_EQ(m->peak_rss_bytes, 300000 * 1024);
  EXPECT_EQ(m->virtual_bytes, 800000 * 1024);
}

TEST(ParseProcStatus, MissingFieldIsNamed) {
  EXPECT_THAT(parse_proc_status("VmSize: 1 kB\nVmHWM: 1 kB\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("VmRSS is missing")));
  EXPECT_THAT(parse_proc_status("VmRSS: x kB\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("VmRSS has malformed")));
}

TEST(ParseMemTotal, ReadsKib) {
  absl::StatusOr<int64_t> total =
      parse_mem_total_bytes("MemTotal:       24576000 kB\nMemFree: 1 kB\n");
  ASSERT_THAT(total, IsOk());
  EXPECT_EQ(*total, int64_t{24576000} * 1024);
}

TEST(ReadMemTotal, MissingFileIsNotFound) {
  EXPECT_THAT(read_mem_total_bytes("/nonexistent/meminfo"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/meminfo")));
}

TEST(PeakRss, ResetThenTouchRaisesPeakAboveRss) {
#ifdef DIFFUSIOND_SANITIZER_BUILD
  GTEST_SKIP() << "sanitizer allocators keep freed blocks resident";
#endif
  ASSERT_THAT(reset_peak_rss(), IsOk());
  absl::StatusOr<ProcessMemory> before = read_process_memory();
  ASSERT_THAT(before, IsOk());
  {
    const size_t size = 64 * kMiB;
    std::unique_ptr<char[]> block(new char[size]);
    std::memset(block.get(), 1, size);
  }
  absl::StatusOr<ProcessMemory> after = read_process_memory();
  ASSERT_THAT(after, IsOk());
  EXPECT_GE(after->peak_rss_bytes - before->rss_bytes, 60 * kMiB);
  EXPECT_LT(after->rss_bytes, after->peak_rss_bytes);  // the block went back
}

}  // namespace
}  // namespace diffusiond
