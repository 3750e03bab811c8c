// The activation estimate's arithmetic and its contract across the two
// ways a call is described (a Denoise's [C, H, W] and a Step's own layout),
// batch, guidance, dtype and device; at the real models' sizes, printed for
// docs/reliability.md. activation_rss_test.cc checks it against measured
// peaks.
#include "core/models/activation_estimate.h"

#include <cstdio>
#include <limits>

#include "core/models/denoiser_activations.h"
#include "core/models/flux/flux_config.h"
#include "core/models/z_image/z_image_config.h"
#include "core/util/bytes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/onednn_cpu.h"
#include "kernels/torch_compat.h"

namespace diffusiond {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

ActivationQuery denoise_query(int64_t side, int64_t batch, int64_t text) {
  ActivationQuery q;
  q.latent_shape = {16, side, side};
  q.batch = batch;
  q.text_tokens = text;
  q.denoise_loop = true;
  return q;
}

TEST(ActivationTally, SumsNamedTermsAndSaturates) {
  ActivationTally tally("m");
  tally.add("a", 3 * kMiB);
  tally.add("empty", 0);
  tally.add("b", 1536);
  ActivationEstimate e = tally.finish();
  EXPECT_EQ(e.bytes, 3 * kMiB + 1536);
  EXPECT_EQ(e.breakdown, "m: a 3.0 MiB, b 2 KiB");

  tally.add("huge", 1e30);
  EXPECT_EQ(tally.finish().bytes, std::numeric_limits<int64_t>::max());
}

TEST(LargestMaterializedWeight, CountsOnlyWeightsNotStoredAtTheDtype) {
  WeightStore store(torch::kFloat32);
  store.add("dense", torch::zeros({64, 64}));                       // used as stored
  store.add("bf16", torch::zeros({16, 16}, torch::kBFloat16));      // converted per use
  store.add("fp8", Fp8Weight{torch::zeros({8, 32}, torch::kUInt8), 1.0f, Fp8Format::kE4M3Fn});
  EXPECT_EQ(largest_materialized_weight_bytes(store, torch::kFloat32), 8 * 32 * 4);
  EXPECT_EQ(largest_materialized_weight_bytes(store, torch::kBFloat16), 64 * 64 * 2);
}

TEST(AttentionScratch, TheFloat32CpuKernelHoldsOneCacheSizedChunk) {
  AttentionOptions o;
  o.prefer_native = false;
  const AttentionShape shape{2, 24, 4608, 4608, 128};
  const int64_t chunk_rows = o.cache_scores_bytes / (4608 * 4);
  EXPECT_EQ(attention_scratch_bytes(shape, torch::kFloat32, true, o), chunk_rows * 4608 * 4 + 2 * 4608 * 5);
  // bf16 on the CPU: through oneDNN, the chunk's probabilities at bf16
  // beside its scores; without native bf16, the float32 kernel on the inputs
  // widened, with q, k, v and the output at float32 besides.
  const int64_t widened = int64_t{2} * 24 * 4 * 4608 * 128 * 4;
  EXPECT_EQ(attention_scratch_bytes(shape, torch::kBFloat16, true, o),
            chunk_rows * 4608 * (have_onednn_bf16() ? 4 + 2 : 4) + 2 * 4608 * 5 + (have_onednn_bf16() ? 0 : widened));
  // float16 takes the generic path: a float32 chunk under max_scores_bytes
  // beside its float16 copy, and the chunks' outputs.
  const int64_t generic = attention_scratch_bytes(shape, torch::kFloat16, true, o);
  EXPECT_GT(generic, o.max_scores_bytes);
  EXPECT_LT(generic, 2 * o.max_scores_bytes + int64_t{2} * 24 * 4608 * 128 * 2 * 2);
  if (compat::kHaveSdpa) {
    o.prefer_native = true;
    EXPECT_EQ(attention_scratch_bytes(shape, torch::kBFloat16, false, o), int64_t{2} * 24 * 4608 * 4);
  }
}

TEST(ZImageActivations, AStepAndADenoiseOfOneShapeShareTheForward) {
  const ZImageConfig c;  // Z-Image-Turbo's sizes
  ActivationQuery step;
  step.latent_shape = {16, 1, 128, 128};
  step.batch = 2;
  step.text_tokens = 100;
  const ActivationEstimate s = denoiser_activations(c, step, {}, 0);
  const ActivationEstimate d = denoiser_activations(c, denoise_query(128, 2, 100), {}, 0);
  EXPECT_GT(d.bytes, s.bytes);  // the loop's float32 latents on top
  EXPECT_LT(d.bytes - s.bytes, 16 * kMiB);  // 12 MiB of float32 latents, plus slack
  EXPECT_THAT(s.breakdown, StartsWith("z-image at float32, batch 2 x 4224 tokens (4096 image + 100 text, padded) x dim 3840: "));
  EXPECT_THAT(s.breakdown, HasSubstr("block peak (FFN, 10240 wide)"));
  EXPECT_THAT(s.breakdown, Not(HasSubstr("denoise loop")));
}

TEST(ZImageActivations, GrowWithTokensBatchAndDecodedWeights) {
  const ZImageConfig c;
  const int64_t one = denoiser_activations(c, denoise_query(128, 1, 100), {}, 0).bytes;
  EXPECT_GT(denoiser_activations(c, denoise_query(128, 2, 100), {}, 0).bytes, 19 * one / 10);
  EXPECT_GT(denoiser_activations(c, denoise_query(160, 1, 100), {}, 0).bytes, one);
  EXPECT_GT(denoiser_activations(c, denoise_query(128, 1, 300), {}, 0).bytes, one);
  const ActivationEstimate fp8 = denoiser_activations(c, denoise_query(128, 1, 100), {}, 157286400);
  EXPECT_GE(fp8.bytes, one + 157286400);
  EXPECT_THAT(fp8.breakdown, HasSubstr("weight decode 150.0 MiB"));
}

TEST(FluxActivations, AGuidedDenoiseRunsTwoForwardsOfOneItem) {
  FluxConfig c;  // FLUX.1-dev's sizes
  c.guidance_embeds = true;
  const ActivationEstimate one = denoiser_activations(c, denoise_query(128, 1, 512), {}, 0);
  const ActivationEstimate guided = denoiser_activations(c, denoise_query(128, 2, 512), {}, 0);
  EXPECT_GT(guided.bytes, one.bytes);
  EXPECT_LT(guided.bytes - one.bytes, 2 * kMiB);
  EXPECT_THAT(guided.breakdown, StartsWith("flux at float32, 2 forwards of batch 1 x 4608 tokens (4096 image + 512 text)"));
  EXPECT_THAT(guided.breakdown, HasSubstr("single block peak (MLP 12288 wide)"));

  ActivationQuery step;  // the same tokens, packed, as a Step of two
  step.latent_shape = {4096, 64};
  step.batch = 2;
  step.text_tokens = 512;
  EXPECT_GT(denoiser_activations(c, step, {}, 0).bytes, 19 * one.bytes / 10);
}

// The figures docs/reliability.md quotes for the real models at 1024x1024.
TEST(RealModelActivations, PrintTheFiguresAt1024) {
  FluxConfig flux;
  flux.guidance_embeds = true;
  for (const int64_t batch : {1, 2}) {
    const ActivationEstimate z = denoiser_activations(ZImageConfig(), denoise_query(128, batch, 128), {}, 0);
    const ActivationEstimate f = denoiser_activations(flux, denoise_query(128, batch, 512), {}, 0);
    std::printf("%s\n  = %s\n%s\n  = %s\n", z.breakdown.c_str(), format_bytes(z.bytes).c_str(), f.breakdown.c_str(),
                format_bytes(f.bytes).c_str());
    EXPECT_GT(z.bytes, 0);
    EXPECT_GT(f.bytes, 0);
  }
}

}  // namespace
}  // namespace diffusiond
