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

}  // namespace
}  // namespace diffusiond
