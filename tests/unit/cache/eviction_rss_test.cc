// Proves that eviction returns memory to the kernel, not just to the
// budget: a child process fills entries with tensors, evicts them, and
// reports its RSS at each stage.
#include <cstdio>
#include <map>
#include <vector>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "core/util/bytes.h"
#include "gtest/gtest.h"
#include "tests/testing/subprocess.h"

namespace diffusiond {
namespace {

// Reads the child's "stage=<name> rss_bytes=<n>" lines into a map.
std::map<std::string, int64_t> run_child(int* exit_status) {
  const testing::CommandOutput out = testing::run_command(EVICTION_RSS_CHILD);
  *exit_status = out.exit_status;
  std::map<std::string, int64_t> stages;
  for (const std::string& line : out.lines) {
    std::vector<std::string> fields = absl::StrSplit(line, absl::ByAnyChar(" ="), absl::SkipEmpty());
    int64_t value = 0;
    if (fields.size() == 4 && absl::SimpleAtoi(fields[3], &value)) stages[fields[1]] = value;
  }
  return stages;
}

TEST(EvictionRss, EvictedTensorsLeaveTheProcess) {
  int exit_code = -1;
  std::map<std::string, int64_t> rss = run_child(&exit_code);
  ASSERT_EQ(exit_code, 0);
  ASSERT_EQ(rss.count("before") + rss.count("loaded") + rss.count("evicted"), 3u);
  const int64_t loaded_delta = rss["loaded"] - rss["before"];
  const int64_t remaining = rss["evicted"] - rss["before"];
  std::printf("RSS before %s, loaded +%s, after eviction +%s\n",
              format_bytes(rss["before"]).c_str(), format_bytes(loaded_delta).c_str(),
              format_bytes(remaining).c_str());
  EXPECT_EQ(rss["evicted_count"], 4);
  EXPECT_GE(loaded_delta, 300 * kMiB);  // 4 models x 80 MiB were resident
  EXPECT_LE(remaining, 16 * kMiB);      // and are gone again
}

}  // namespace
}  // namespace diffusiond
