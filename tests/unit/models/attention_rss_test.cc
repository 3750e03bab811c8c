// Attention's activation memory must not grow with sequence²: over 4224
// tokens the full score matrix of even 2 heads is 143 MB; the chunked
// kernel, given a 4 MiB budget, must peak far below that (well under half). Measured in a
// child process so the RSS is its own.
#include <cstdio>
#include <string>

#include "absl/strings/numbers.h"
#include "core/util/bytes.h"
#include "gtest/gtest.h"
#include "tests/testing/subprocess.h"

namespace diffusiond {
namespace {

TEST(AttentionRss, ScoresStayWithinTheirBudget) {
  const testing::CommandOutput out = testing::run_command(ATTENTION_RSS_CHILD);
  ASSERT_EQ(out.exit_status, 0);
  int64_t peak = -1;
  for (const std::string& line : out.lines) {
    if (line.rfind("peak_rss_delta_bytes=", 0) == 0) {
      ASSERT_TRUE(absl::SimpleAtoi(line.substr(21), &peak));
    }
  }
  std::printf("attention over 4224 tokens, 2 heads: peak RSS delta %s (full scores: 143 MB)\n",
              format_bytes(peak).c_str());
  EXPECT_GE(peak, 0);
  EXPECT_LT(peak, 64 * kMiB);
}

}  // namespace
}  // namespace diffusiond
