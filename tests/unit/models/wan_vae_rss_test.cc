// A video decode and encode of the causal 3-D VAE must stay within the
// activation bound wan_vae_memory.h walks: the feature caches of every
// conv plus one chunk's working memory, the frames handed on as they are
// made. Measured in a child process (wan_vae_rss_child.cc) so the RSS is its
// own: the Wan 2.1 VAE's layout at a sixth of its widths, 3 latent frames
// (9 frames: the third chunk runs with full caches, as every later one)
// at 32 x 48 latents (256 x 384 pixels), float32.
//
// The child runs the daemon's allocator (core/memory/allocator.h).
#include <cstdio>
#include <string>

#include "absl/strings/numbers.h"
#include "core/util/bytes.h"
#include "gtest/gtest.h"
#include "tests/testing/subprocess.h"

namespace diffusiond {
namespace {

// What the process holds beyond the walk's tensors: oneDNN's kernels and
// scratch, libtorch's thread pools, allocator slack.
constexpr int64_t kSlackBytes = 32 * kMiB;

void expect_within_estimate(const std::string& args) {
  const testing::CommandOutput out = testing::run_command(std::string(WAN_VAE_RSS_CHILD) + " " + args);
  ASSERT_EQ(out.exit_status, 0) << args;
  int64_t peak = -1, estimate = -1;
  for (const std::string& line : out.lines) {
    if (line.rfind("peak_rss_delta_bytes=", 0) == 0) { ASSERT_TRUE(absl::SimpleAtoi(line.substr(21), &peak)); }
    if (line.rfind("estimate_bytes=", 0) == 0) { ASSERT_TRUE(absl::SimpleAtoi(line.substr(15), &estimate)); }
  }
  std::printf("%s: peak RSS delta %s, estimate %s (%.2f of it; + %s slack)\n", args.c_str(),
              format_bytes(peak).c_str(), format_bytes(estimate).c_str(),
              static_cast<double>(peak) / static_cast<double>(estimate), format_bytes(kSlackBytes).c_str());
  EXPECT_GT(peak, 0);
  EXPECT_LT(peak, estimate + kSlackBytes);
  // An estimate far above the peak would refuse calls that fit.
  EXPECT_GT(peak, estimate / 2);
}

TEST(WanVaeRss, StreamedVideoDecodeStaysWithinTheEstimate) { expect_within_estimate("decode 3 32 48"); }

TEST(WanVaeRss, VideoEncodeStaysWithinTheEstimate) { expect_within_estimate("encode 3 32 48"); }

}  // namespace
}  // namespace diffusiond
