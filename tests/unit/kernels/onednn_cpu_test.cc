// kernels/onednn_cpu.h's linear against torch::linear and a float64
// reference. Attention through oneDNN is tested with attention() itself
// (models/attention_test.cc). Skipped on a CPU without native bf16 products,
// where nothing calls them.
#include "kernels/onednn_cpu.h"

#include <torch/torch.h>

#include "gtest/gtest.h"

namespace diffusiond {
namespace {

double max_error(const torch::Tensor& got, const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
  const auto f64 = [](const torch::Tensor& t) { return t.defined() ? t.to(torch::kFloat64) : t; };
  const torch::Tensor want = torch::linear(f64(x), f64(w), f64(b));
  return (f64(got) - want).abs().max().item<double>() / want.abs().max().item<double>();
}

TEST(OneDnnLinear, Bfloat16IsTheFloat64ResultRoundedOnce) {
  if (!have_onednn_bf16()) GTEST_SKIP() << "no native bf16 products on this CPU: " << onednn_description();
  torch::manual_seed(7);
  const auto bf16 = [](torch::Tensor t) { return t.to(torch::kBFloat16); };
  const torch::Tensor x = bf16(torch::randn({2, 37, 96})), fused = bf16(torch::randn({3 * 40, 96}));
  const torch::Tensor bias = bf16(torch::randn({40}));
  // Rows of a fused weight (WeightStore::split_rows' views), with and
  // without a bias, a float32 bias, and a single row of input.
  const torch::Tensor w = fused.narrow(0, 40, 40);
  for (const torch::Tensor& b : {bias, torch::Tensor(), bias.to(torch::kFloat32)}) {
    const torch::Tensor got = onednn_bf16_linear(x, w, b);
    EXPECT_EQ(got.sizes(), (std::vector<int64_t>{2, 37, 40}));
    EXPECT_EQ(got.scalar_type(), torch::kBFloat16);
    // One rounding to bf16 (2^-9 relative) of a float32 sum of 96 products.
    EXPECT_LT(max_error(got, x, w, b), 1e-2);
    // libtorch's own bf16 linear rounds the same sums: at most an ulp apart.
    const torch::Tensor torch_bias = b.defined() ? b.to(torch::kBFloat16) : b;  // libtorch wants one dtype
    EXPECT_LT((got.to(torch::kFloat32) - torch::linear(x, w, torch_bias).to(torch::kFloat32)).abs().max().item<float>(),
              0.02 * got.abs().max().item<float>());
  }
  const torch::Tensor one = x[0].narrow(0, 3, 1);
  EXPECT_LT(max_error(onednn_bf16_linear(one, w, bias), one, w, bias), 1e-2);
  // Input rows with a stride (a column slice) and a transposed weight.
  const torch::Tensor wide = bf16(torch::randn({37, 2 * 96})), wt = bf16(torch::randn({96, 40})).t();
  EXPECT_LT(max_error(onednn_bf16_linear(wide.narrow(1, 96, 96), wt, bias), wide.narrow(1, 96, 96), wt, bias), 1e-2);
  // No rows: an empty result of the right shape.
  EXPECT_EQ(onednn_bf16_linear(x.narrow(1, 0, 0), w, bias).sizes(), (std::vector<int64_t>{2, 0, 40}));
}

}  // namespace
}  // namespace diffusiond
