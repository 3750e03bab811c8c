// A tiled VAE decode must stay within the activation bound vae_memory.h
// states. A 2048x2048 decode (256x256 latents) with the tiny config, tiled
// with upstream's default 128-latent tiles: the formula gives ~0.5 GB (one
// tile's forward ~0.4 GB at 1024x1024 pixels, the 48 MB output twice, two
// rows of 12 MB tiles), where an untiled decode would need ~1.7 GB.
// Measured in a child process so the RSS is its own.
#include <cstdio>
#include <string>

#include "absl/strings/numbers.h"
#include "core/util/bytes.h"
#include "gtest/gtest.h"
#include "tests/testing/subprocess.h"

namespace diffusiond {
namespace {

// What the process holds beyond the formula's tensors: libtorch's and
// oneDNN's per-thread scratch and allocator slack.
constexpr int64_t kSlackBytes = 32 * kMiB;

TEST(VaeRss, TiledDecodeOf2048StaysWithinTheFormula) {
  const testing::CommandOutput out = testing::run_command(std::string(VAE_RSS_CHILD) + " tiled 256");
  ASSERT_EQ(out.exit_status, 0);
  int64_t peak = -1, formula = -1;
  for (const std::string& line : out.lines) {
    if (line.rfind("peak_rss_delta_bytes=", 0) == 0) ASSERT_TRUE(absl::SimpleAtoi(line.substr(21), &peak));
    if (line.rfind("formula_bytes=", 0) == 0) ASSERT_TRUE(absl::SimpleAtoi(line.substr(14), &formula));
  }
  std::printf("tiled 2048x2048 decode, tiny config: peak RSS delta %s, formula %s\n",
              format_bytes(peak).c_str(), format_bytes(formula).c_str());
  EXPECT_GE(peak, 0);
  EXPECT_GT(formula, 0);
  EXPECT_LT(peak, formula + kSlackBytes);
}

}  // namespace
}  // namespace diffusiond
