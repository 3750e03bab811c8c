// DiffusionModel::estimate_activations against what one call really holds:
// the peak RSS growth of one Denoise step (or one Step) of the demo Z-Image
// and FLUX models (tools/random_models) at three latent sizes, batch 1 and
// 2 (guided), each in its own child process (activation_rss_child). The
// estimate must never be below the peak and at most 25% (+ 4 MiB) above it.
//
// The child maps every allocation of 1 MiB or more (mmap threshold), so RSS
// follows the tensors, as vae_rss_test measures the VAE. Under the daemon's
// 256 MiB threshold these activations come from the heap, and its
// fragmentation adds to the peak (docs/reliability.md has the figures).
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

struct Case {
  const char* model;  // "z-image" or "flux"
  int side;           // latent side
  int batch;          // 2: a guided Denoise, or a Step of two items
  const char* call;   // "denoise" or "step"
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.model << " " << c.call << " " << c.side << "x" << c.side << " batch " << c.batch;
}

class ActivationRss : public ::testing::TestWithParam<Case> {};

TEST_P(ActivationRss, EstimateCoversThePeakWithin25Percent) {
  const Case& c = GetParam();
  const std::string command =
      absl::StrCat(ACTIVATION_RSS_CHILD, " ", c.model, " ", c.side, " ", c.batch, " ", c.call, " 1");
  const testing::CommandOutput out = testing::run_command(command);
  ASSERT_EQ(out.exit_status, 0) << command;
  int64_t peak = -1, estimate = -1;
  std::string breakdown;
  for (const std::string& line : out.lines) {
    if (line.rfind("peak_rss_delta_bytes=", 0) == 0) { ASSERT_TRUE(absl::SimpleAtoi(line.substr(21), &peak)); }
    if (line.rfind("estimate_bytes=", 0) == 0) { ASSERT_TRUE(absl::SimpleAtoi(line.substr(15), &estimate)); }
    if (line.rfind("breakdown=", 0) == 0) breakdown = line.substr(10);
  }
  std::printf("%s %s %dx%d batch %d: peak RSS delta %s, estimate %s (%.2fx)\n  %s\n", c.model, c.call, c.side,
              c.side, c.batch, format_bytes(peak).c_str(), format_bytes(estimate).c_str(),
              static_cast<double>(estimate) / static_cast<double>(peak), breakdown.c_str());
  ASSERT_GT(peak, 0);
  EXPECT_GE(estimate, peak) << breakdown;
  // At most 25% over, plus a fixed 4 MiB: the estimate's own allocator
  // slack is a constant (3.7 MiB for the demo models), and the measured
  // peak of the same call moves by about 1 MiB between runs, so at 64x64
  // (a 16 MiB peak) the ratio alone passed on one run and failed on the next.
  EXPECT_LE(static_cast<double>(estimate), 1.25 * static_cast<double>(peak) + 4.0 * kMiB) << breakdown;
}

INSTANTIATE_TEST_SUITE_P(
    DemoModels, ActivationRss,
    ::testing::Values(Case{"z-image", 64, 1, "denoise"}, Case{"z-image", 64, 2, "denoise"},
                      Case{"z-image", 96, 1, "denoise"}, Case{"z-image", 96, 2, "denoise"},
                      Case{"z-image", 128, 1, "denoise"}, Case{"z-image", 128, 2, "denoise"},
                      Case{"z-image", 96, 2, "step"}, Case{"flux", 64, 1, "denoise"}, Case{"flux", 64, 2, "denoise"},
                      Case{"flux", 96, 1, "denoise"}, Case{"flux", 96, 2, "denoise"},
                      Case{"flux", 128, 1, "denoise"}, Case{"flux", 128, 2, "denoise"},
                      Case{"flux", 96, 2, "step"}),
    [](const ::testing::TestParamInfo<Case>& info) {
      const Case& c = info.param;
      return absl::StrCat(c.model[0] == 'z' ? "ZImage" : "Flux", c.side, "Batch", c.batch,
                          c.call[0] == 's' ? "Step" : "Denoise");
    });

}  // namespace
}  // namespace diffusiond
