#include "core/loader/parallel_parts.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace diffusiond {
namespace {

// The parts run_parts made, sorted by where they begin.
std::vector<std::pair<int64_t, int64_t>> parts_of(int64_t n, int64_t align, int64_t min_part) {
  std::mutex mu;
  std::vector<std::pair<int64_t, int64_t>> parts;
  EXPECT_TRUE(run_parts(n, align, min_part, [&](int64_t begin, int64_t end) {
                std::lock_guard<std::mutex> lock(mu);
                parts.emplace_back(begin, end);
                return absl::OkStatus();
              }).ok());
  std::sort(parts.begin(), parts.end());
  return parts;
}

TEST(RunParts, CoversTheRangeOnceInAlignedParts) {
  at::set_num_threads(3);
  for (const int64_t n : {int64_t{1}, int64_t{6}, int64_t{1000}, int64_t{1001}, int64_t{99999}}) {
    const auto parts = parts_of(n, /*align=*/6, /*min_part=*/10);
    ASSERT_FALSE(parts.empty());
    EXPECT_LE(parts.size(), 3u);
    int64_t at = 0;
    for (const auto& [begin, end] : parts) {
      EXPECT_EQ(begin, at) << n;
      EXPECT_LT(begin, end) << n;
      if (end != n) EXPECT_EQ(end % 6, 0) << n;  // every cut between whole elements
      at = end;
    }
    EXPECT_EQ(at, n);
  }
  EXPECT_EQ(parts_of(25, 1, 10).size(), 2u);  // no part under min_part where it can be helped
  EXPECT_TRUE(parts_of(0, 1, 1).empty());
}

TEST(RunParts, ReturnsThePartsFirstErrorAndTurnsExceptionsIntoStatuses) {
  at::set_num_threads(2);
  const absl::Status failed = run_parts(100, 1, 1, [](int64_t begin, int64_t) {
    return begin == 0 ? absl::DataLossError("first part") : absl::UnavailableError("second part");
  });
  EXPECT_EQ(failed.code(), absl::StatusCode::kDataLoss);
  const absl::Status thrown = run_parts(100, 1, 1, [](int64_t begin, int64_t) -> absl::Status {
    if (begin > 0) throw std::runtime_error("a cast threw");
    return absl::OkStatus();
  });
  EXPECT_EQ(thrown.code(), absl::StatusCode::kInternal);
  EXPECT_NE(thrown.message().find("a cast threw"), absl::string_view::npos) << thrown;
}

}  // namespace
}  // namespace diffusiond
