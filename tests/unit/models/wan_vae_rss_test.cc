// A video decode and encode of the causal 3-D VAE must stay within the
// activation bound wan_vae_memory.h walks: the feature caches of every
// conv plus one chunk's working memory, the frames handed on as they are
// made. Measured in a child process (wan_vae_rss_child.cc) so the RSS is its
// own: the Wan 2.1 VAE's layout at a sixth of its widths, 3 latent frames
// (9 frames: the third chunk runs with full caches, as every later one)
// at 32 x 48 latents (256 x 384 pixels), float32, in an activation arena
// sized by the estimate, as the engine runs a call. At this size the
// full-resolution convs take oneDNN and the 64-channel ones libtorch's
// native path with its column buffer (a smaller clip would take the native
// path everywhere: twice the memory, which the walk follows too). The walk's
// tensors (262.1 MiB) came within 0.1% of an unbounded arena's peak of live
// bytes (261.8 MiB); here the RSS is the arena filled to its capacity (the
// estimate, 296.3 MiB) and about 10 MiB of heap beside it.
//
// The child runs the daemon's allocator (core/memory/allocator.h).
#include <cstdio>
#include <string>

#include "absl/strings/numbers.h"
#include "core/models/wan_vae/wan_vae_config.h"
#include "core/models/wan_vae/wan_vae_memory.h"
#include "core/util/bytes.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/subprocess.h"

namespace diffusiond {
namespace {

// What the process adds beyond the estimate (which has the allocator's
// share already): oneDNN's kernels, libtorch's thread pools, the heap's
// small tensors beside the arena. Measured 10-11 MiB; the AutoencoderKL
// test allows the same 32 MiB.
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

TEST(WanVaeRss, StreamedVideoDecodeStaysWithinTheEstimate) { expect_within_estimate("decode 3 32 48 arena"); }

TEST(WanVaeRss, VideoEncodeStaysWithinTheEstimate) { expect_within_estimate("encode 3 32 48 arena"); }

// The figures docs/models.md states for the real Wan 2.1 VAE
// (docs/configs/wan2.1-vae.json): an 81-frame decode (21 latent frames) at
// 480p (832 x 480) and 720p (1280 x 720), streamed, in hundredths of a GiB.
TEST(WanVaeRss, RealSizeFiguresAreTheDocs) {
  absl::StatusOr<WanVaeConfig> config =
      wan_vae_config_from_json(testing::read_json_file(testing::docs_dir() + "/configs/wan2.1-vae.json"), "wan2.1-vae");
  ASSERT_TRUE(config.ok()) << config.status();
  const auto gib100 = [](int64_t bytes) { return static_cast<int64_t>(bytes * 100.0 / kGiB + 0.5); };
  struct Case {
    const char* name;
    int64_t w, h, element;
    int64_t streamed, cache, chunk, frames;  // GiB / 100
  };
  const Case cases[] = {{"480p float32", 104, 60, 4, 704, 352, 286, 36},
                        {"480p bfloat16", 104, 60, 2, 415, 176, 200, 18},
                        {"720p float32", 160, 90, 4, 1623, 812, 659, 83},
                        {"720p bfloat16", 160, 90, 2, 957, 406, 461, 42}};
  for (const Case& c : cases) {
    const WanVaeDecodeBytes b = wan_vae_decode_activation_bytes(*config, 1, 21, c.h, c.w, c.element, std::nullopt);
    std::printf("%s, 81 frames: streamed %s (caches %s, one chunk %s), every frame %s, joined %s\n", c.name,
                format_bytes(b.streamed).c_str(), format_bytes(b.cache).c_str(), format_bytes(b.chunk).c_str(),
                format_bytes(b.frames).c_str(), format_bytes(b.joined).c_str());
    EXPECT_EQ(gib100(b.streamed), c.streamed) << c.name;
    EXPECT_EQ(gib100(b.cache), c.cache) << c.name;
    EXPECT_EQ(gib100(b.chunk), c.chunk) << c.name;
    EXPECT_EQ(gib100(b.frames), c.frames) << c.name;
  }
}

// And Qwen-Image's VAE (docs/configs/qwen-image-vae.json) on one 1024 x 1024
// image, whole and in upstream's default tiles, in hundredths of a GiB.
TEST(WanVaeRss, QwenImageFiguresAreTheDocs) {
  absl::StatusOr<WanVaeConfig> config = wan_vae_config_from_json(
      testing::read_json_file(testing::docs_dir() + "/configs/qwen-image-vae.json"), "qwen-image-vae");
  ASSERT_TRUE(config.ok()) << config.status();
  const auto gib100 = [](int64_t bytes) { return static_cast<int64_t>(bytes * 100.0 / kGiB + 0.5); };
  const struct {
    int64_t element, whole, tiled;
  } cases[] = {{4, 207, 26}, {2, 145, 16}};
  for (const auto& c : cases) {
    const int64_t whole = wan_vae_decode_activation_bytes(*config, 1, 1, 128, 128, c.element, std::nullopt).streamed;
    const int64_t tiled = wan_vae_decode_activation_bytes(*config, 1, 1, 128, 128, c.element, WanVaeTiling()).streamed;
    std::printf("Qwen-Image VAE, 1024 x 1024, %lld-byte elements: whole %s, tiled %s\n",
                static_cast<long long>(c.element), format_bytes(whole).c_str(), format_bytes(tiled).c_str());
    EXPECT_EQ(gib100(whole), c.whole);
    EXPECT_EQ(gib100(tiled), c.tiled);
  }
}

}  // namespace
}  // namespace diffusiond
