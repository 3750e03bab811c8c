#include "core/models/common/attention.h"

#include <torch/utils.h>

#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "kernels/onednn_cpu.h"

namespace diffusiond {
namespace {

// softmax(q kᵀ / √d + mask) v, all at once.
torch::Tensor naive(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                    const torch::Tensor& mask) {
  torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(3)));
  scores = scores.masked_fill(mask.logical_not().view({q.size(0), 1, 1, -1}),
                              -std::numeric_limits<double>::infinity());
  return torch::matmul(torch::softmax(scores, -1), v);
}

TEST(Attention, AMaskAdmitsEveryKeyOnlyWhenTrueEverywhere) {
  EXPECT_FALSE(admits_every_key(torch::Tensor()));
  EXPECT_TRUE(admits_every_key(torch::ones({2, 5}, torch::kBool)));
  EXPECT_TRUE(admits_every_key(torch::ones({2, 5}, torch::kFloat32))) << "upstream takes any mask as bool";
  torch::Tensor padded = torch::ones({2, 5}, torch::kInt64);
  padded[1][4] = 0;
  EXPECT_FALSE(admits_every_key(padded));
}

TEST(Attention, ChunkedMatchesNaiveWithAKeyMask) {
  torch::manual_seed(3);
  const auto q = torch::randn({2, 3, 70, 16}, torch::kFloat64);
  const auto k = torch::randn({2, 3, 70, 16}, torch::kFloat64);
  const auto v = torch::randn({2, 3, 70, 16}, torch::kFloat64);
  torch::Tensor mask = torch::ones({2, 70}, torch::kBool);
  mask[1].narrow(0, 50, 20).fill_(false);  // batch padding of item 1
  AttentionOptions tiny;
  tiny.prefer_native = false;
  tiny.max_scores_bytes = 2 * 3 * 70 * 8 * 9;  // nine query rows per chunk
  const torch::Tensor got = attention(q, k, v, mask, tiny);
  EXPECT_LT((got - naive(q, k, v, mask)).abs().max().item<double>(), 1e-12);
}

TEST(Attention, Float32CpuChunksMatchNaiveWithAndWithoutAMask) {
  torch::manual_seed(5);
  const auto q = torch::randn({2, 3, 70, 16}), k = torch::randn({2, 3, 60, 16}), v = torch::randn({2, 3, 60, 16});
  torch::Tensor mask = torch::ones({2, 60}, torch::kBool);
  mask[0].narrow(0, 41, 19).fill_(false);
  AttentionOptions options;
  options.prefer_native = false;
  options.cache_scores_bytes = 60 * 4 * 13;  // thirteen query rows per chunk: 70 = 5 x 13 + 5
  const auto q64 = q.to(torch::kFloat64), k64 = k.to(torch::kFloat64), v64 = v.to(torch::kFloat64);
  const torch::Tensor masked = attention(q, k, v, mask, options);
  EXPECT_EQ(masked.scalar_type(), torch::kFloat32);
  EXPECT_LT((masked.to(torch::kFloat64) - naive(q64, k64, v64, mask)).abs().max().item<double>(), 1e-5);
  // An all-true mask is no mask.
  const torch::Tensor all = torch::ones({2, 60}, torch::kBool);
  const torch::Tensor unmasked = attention(q, k, v, all, options);
  EXPECT_LT((unmasked.to(torch::kFloat64) - naive(q64, k64, v64, all)).abs().max().item<double>(), 1e-5);
  EXPECT_TRUE(unmasked.equal(attention(q, k, v, torch::Tensor(), options)));
}

TEST(Attention, ReducedPrecisionSoftmaxRunsInFloat32) {
  torch::manual_seed(4);
  const auto q = torch::randn({1, 2, 40, 8}), k = torch::randn({1, 2, 40, 8}), v = torch::randn({1, 2, 40, 8});
  const torch::Tensor mask = torch::ones({1, 40}, torch::kBool);
  AttentionOptions options;
  options.prefer_native = false;
  const torch::Tensor got = attention(q.to(torch::kBFloat16), k.to(torch::kBFloat16),
                                      v.to(torch::kBFloat16), mask, options);
  EXPECT_EQ(got.scalar_type(), torch::kBFloat16);
  EXPECT_LT((got.to(torch::kFloat32) - naive(q, k, v, mask)).abs().max().item<float>(), 0.05);
}

// bf16 on the CPU: through oneDNN where the CPU has native bf16 products
// (both products at bf16, float32 scores and softmax), within bf16's rounding
// of the float64 result, chunked with a shorter last chunk, masked keys
// ignored whatever they hold. Elsewhere the float32 kernel on the inputs
// widened, the output rounded once: bit for bit that.
TEST(Attention, Bfloat16OnTheCpu) {
  torch::manual_seed(5);
  const auto bf16 = [](const torch::Tensor& t) { return t.to(torch::kBFloat16); };
  const torch::Tensor q = bf16(torch::randn({2, 3, 37, 16})), k = bf16(torch::randn({2, 3, 29, 16})),
                      v = bf16(torch::randn({2, 3, 29, 24}));
  torch::Tensor mask = torch::ones({2, 29}, torch::kBool);
  mask[1].narrow(0, 20, 9).fill_(false);
  AttentionOptions options;
  options.prefer_native = false;
  options.cache_scores_bytes = 29 * 4 * 10;  // ten query rows per chunk: 37 = 3 x 10 + 7
  const torch::Tensor got = attention(q, k, v, mask, options);
  EXPECT_EQ(got.scalar_type(), torch::kBFloat16);
  const auto f32 = [](const torch::Tensor& t) { return t.to(torch::kFloat32); };
  const torch::Tensor widened = bf16(attention(f32(q), f32(k), f32(v), mask, options));
  if (!have_onednn_bf16()) {
    EXPECT_TRUE(got.equal(widened));
    return;
  }
  const auto f64 = [](const torch::Tensor& t) { return t.to(torch::kFloat64); };
  const torch::Tensor want = naive(f64(q), f64(k), f64(v), mask);
  // The probabilities and the output each rounded to bf16 (2^-9 relative):
  // the error stays within a few of the output's ulps.
  const double scale = want.abs().max().item<double>();
  EXPECT_LT((f64(got) - want).abs().max().item<double>(), 0.02 * scale);
  EXPECT_LT((f64(widened) - want).abs().max().item<double>(), 0.02 * scale);
  // Keys masked out do not count, whatever they hold.
  torch::Tensor k2 = k.clone(), v2 = v.clone();
  k2[1].narrow(1, 20, 9).fill_(100);
  v2[1].narrow(1, 20, 9).fill_(-100);
  EXPECT_TRUE(attention(q, k2, v2, mask, options).equal(got));
  // Without a mask, and with one that admits every key: the same.
  const torch::Tensor unmasked = attention(q, k, v, torch::Tensor(), options);
  EXPECT_TRUE(unmasked.equal(attention(q, k, v, torch::ones({2, 29}, torch::kBool), options)));
  EXPECT_LT(
      (f64(unmasked) - naive(f64(q), f64(k), f64(v), torch::ones({2, 29}, torch::kBool))).abs().max().item<double>(),
      0.02 * scale);
  // A query whose keys are all masked gives NaN, as the float32 kernel does.
  torch::Tensor none = mask.clone();
  none[0].fill_(false);
  const torch::Tensor blind = attention(q, k, v, none, options);
  EXPECT_TRUE(torch::isnan(blind[0]).all().item<bool>());
  EXPECT_TRUE(blind[1].equal(got[1]));
}

}  // namespace
}  // namespace diffusiond
