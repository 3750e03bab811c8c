#include "core/util/bytes.h"

#include "gtest/gtest.h"

namespace diffusiond {
namespace {

TEST(FormatBytes, SmallCountsAreExact) {
  EXPECT_EQ(format_bytes(0), "0 bytes");
  EXPECT_EQ(format_bytes(1023), "1023 bytes");
}

TEST(FormatBytes, LargeCountsShowUnitAndExactCount) {
  EXPECT_EQ(format_bytes(1536), "1.50 KiB (1536 bytes)");
  EXPECT_EQ(format_bytes(3 * kMiB), "3.00 MiB (3145728 bytes)");
  EXPECT_EQ(format_bytes(kGiB + kGiB / 2), "1.50 GiB (1610612736 bytes)");
  EXPECT_EQ(format_bytes(-2 * kGiB), "-2.00 GiB (-2147483648 bytes)");
}

TEST(ParseBytes, AcceptsPlainCountsAndUnits) {
  EXPECT_EQ(*parse_bytes("1073741824"), 1073741824);
  EXPECT_EQ(*parse_bytes("12GiB"), 12 * kGiB);
  EXPECT_EQ(*parse_bytes("800MB"), 800'000'000);
  EXPECT_EQ(*parse_bytes(" 1.5 gib "), kGiB + kGiB / 2);
  EXPECT_EQ(*parse_bytes("64KiB"), 64 * kKiB);
  EXPECT_EQ(*parse_bytes("7B"), 7);
}

TEST(ParseBytes, RejectsGarbageNegativesAndOverflow) {
  for (const char* bad : {"", "GiB", "-1", "-1GiB", "12 parsecs", "1.5", "1e30GiB", "nanGiB"}) {
    absl::StatusOr<int64_t> parsed = parse_bytes(bad);
    EXPECT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace diffusiond
