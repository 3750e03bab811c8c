// DiffusionModel::estimate_activations against what one call really holds:
// the peak RSS growth of one Denoise step (or one Step) of the demo Z-Image
// and FLUX models (tools/random_models) at three latent sizes, and of the
// demo Qwen-Image, Krea 2 and Wan at two, batch 1 and 2 (guided), at
// float32, and one Z-Image case at bf16; each in its own child process
// (activation_rss_child). The
// estimate must cover the peak (less the run-to-run noise of the heap) and
// be at most 25% (+ 8 MiB) above it.
//
// The child runs the daemon's allocator (core/memory/allocator.h), so the
// peak includes what the heap adds; call_rss_test checks the same calls
// through the engine against their reservations.
#include <cstdio>
#include <ostream>
#include <string>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/util/bytes.h"
#include "gtest/gtest.h"
#include "tests/testing/subprocess.h"

namespace diffusiond {
namespace {

constexpr int64_t kPeakNoiseBytes = 6 * kMiB;

struct Case {
  const char* model;  // "z-image", "flux", "qwen-image", "krea2", "wan" or "cosmos"
  int side;           // latent side
  int batch;          // 2: a guided Denoise, or a Step of two items
  const char* call;   // "denoise" or "step"
  const char* dtype = "float32";  // or "bfloat16": oneDNN's attention where the CPU has native bf16
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.model << " " << c.call << " " << c.side << "x" << c.side << " batch " << c.batch << " " << c.dtype;
}

class ActivationRss : public ::testing::TestWithParam<Case> {};

TEST_P(ActivationRss, EstimateCoversThePeakWithin25Percent) {
  const Case& c = GetParam();
  const std::string command =
      absl::StrCat(ACTIVATION_RSS_CHILD, " ", c.model, " ", c.side, " ", c.batch, " ", c.call, " ", c.dtype);
  const testing::CommandOutput out = testing::run_command(command);
  ASSERT_EQ(out.exit_status, 0) << command;
  int64_t peak = -1, estimate = -1;
  std::string breakdown;
  for (const std::string& line : out.lines) {
    if (line.rfind("peak_rss_delta_bytes=", 0) == 0) { ASSERT_TRUE(absl::SimpleAtoi(line.substr(21), &peak)); }
    if (line.rfind("estimate_bytes=", 0) == 0) { ASSERT_TRUE(absl::SimpleAtoi(line.substr(15), &estimate)); }
    if (line.rfind("breakdown=", 0) == 0) breakdown = line.substr(10);
  }
  std::printf("%s %s %dx%d batch %d %s: peak RSS delta %s, estimate %s (%.2fx)\n  %s\n", c.model, c.call, c.side,
              c.side, c.batch, c.dtype, format_bytes(peak).c_str(), format_bytes(estimate).c_str(),
              static_cast<double>(estimate) / static_cast<double>(peak), breakdown.c_str());
  ASSERT_GT(peak, 0);
  // The peak of the same call moves between runs under jemalloc by up to
  // 4.5 MiB (z-image 64x64 batch 2: 41.9 and 46.4 MiB), more than the
  // estimate's margin at that size; what the engine promises is checked
  // with that noise in engine/call_rss_test.cc.
  EXPECT_GE(estimate + kPeakNoiseBytes, peak) << breakdown;
  // At most 25% over, plus the estimate's fixed 8 MiB of slack
  // (activation_allocator_slack_bytes): at 64x64 (a 25 MiB peak) it is a
  // third of the estimate.
  EXPECT_LE(static_cast<double>(estimate), 1.25 * static_cast<double>(peak) + 8.0 * kMiB) << breakdown;
}

INSTANTIATE_TEST_SUITE_P(DemoModels, ActivationRss,
                         // 128x128 at batch 2 only: batch 1 at that size measured
                         // nothing the two around it do not, for 10 s of a CI run.
                         ::testing::Values(Case{"z-image", 64, 1, "denoise"}, Case{"z-image", 64, 2, "denoise"},
                                           Case{"z-image", 96, 1, "denoise"}, Case{"z-image", 96, 2, "denoise"},
                                           Case{"z-image", 128, 2, "denoise"}, Case{"z-image", 96, 2, "step"},
                                           Case{"z-image", 96, 2, "denoise", "bfloat16"},
                                           Case{"flux", 64, 1, "denoise"}, Case{"flux", 64, 2, "denoise"},
                                           Case{"flux", 96, 1, "denoise"}, Case{"flux", 96, 2, "denoise"},
                                           Case{"flux", 128, 2, "denoise"}, Case{"flux", 96, 2, "step"},
                                           Case{"qwen-image", 64, 1, "denoise"}, Case{"qwen-image", 96, 2, "denoise"},
                                           Case{"qwen-image", 96, 2, "step"}, Case{"krea2", 64, 1, "denoise"},
                                           Case{"krea2", 96, 2, "denoise"}, Case{"krea2", 96, 2, "step"},
                                           Case{"wan", 64, 1, "denoise"}, Case{"wan", 96, 2, "denoise"},
                                           Case{"wan", 96, 2, "step"}, Case{"cosmos", 64, 1, "denoise"},
                                           Case{"cosmos", 96, 2, "denoise"}, Case{"cosmos", 96, 2, "step"}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           const Case& c = info.param;
                           return absl::StrCat(c.model[0] == 'z'   ? "ZImage"
                                               : c.model[0] == 'f' ? "Flux"
                                               : c.model[0] == 'q' ? "QwenImage"
                                               : c.model[0] == 'k' ? "Krea2"
                                               : c.model[0] == 'c' ? "Cosmos"
                                                                   : "Wan",
                                               c.side, "Batch", c.batch, c.call[0] == 's' ? "Step" : "Denoise",
                                               c.dtype[0] == 'b' ? "Bf16" : "");
                         });

}  // namespace
}  // namespace diffusiond
