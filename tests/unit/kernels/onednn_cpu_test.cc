// kernels/onednn_cpu.h's linear against torch::linear and a float64
// reference. Attention through oneDNN is tested with attention() itself
// (models/attention_test.cc). Skipped on a CPU without native bf16 products,
// where nothing calls them.
#include "kernels/onednn_cpu.h"

#include <torch/torch.h>

#include "core/precision/weight_store.h"
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

TEST(OneDnnPacking, APackedWeightGivesThePlainProductsAndUnpacksExactly) {
  if (!have_onednn_bf16()) GTEST_SKIP() << "no native bf16 products on this CPU: " << onednn_description();
  torch::manual_seed(11);
  const auto bf16 = [](torch::Tensor t) { return t.to(torch::kBFloat16); };
  // Rows of a fused weight, as WeightStore::split_rows leaves them.
  const torch::Tensor fused = bf16(torch::randn({3 * 128, 64}));
  const torch::Tensor w = fused.narrow(0, 128, 128), original = w.clone();
  ASSERT_TRUE(onednn_pack_bf16_weight(w));
  EXPECT_FALSE(torch::equal(w, original)) << "rewritten in its own bytes";
  EXPECT_TRUE(torch::equal(fused.narrow(0, 0, 128), fused.narrow(0, 0, 128).clone())) << "its neighbours untouched";
  EXPECT_TRUE(torch::equal(onednn_unpack_bf16_weight(w), original));
  const torch::Tensor bias = bf16(torch::randn({128}));
  for (int64_t rows : {1, 5, 300}) {
    const torch::Tensor x = bf16(torch::randn({rows, 64}));
    for (const torch::Tensor& b : {bias, torch::Tensor()}) {
      EXPECT_TRUE(torch::equal(onednn_bf16_linear_packed(x, w, b), onednn_bf16_linear(x, original, b)))
          << rows << " rows";
    }
  }
  // What cannot be packed is left as it is.
  const torch::Tensor odd = bf16(torch::randn({24, 8})), odd_before = odd.clone();
  const torch::Tensor f32 = torch::randn({128, 64});
  EXPECT_FALSE(onednn_pack_bf16_weight(f32));
  EXPECT_FALSE(onednn_pack_bf16_weight(bf16(torch::randn({64, 256})).t()));  // not contiguous
  if (!onednn_pack_bf16_weight(odd)) {
    EXPECT_TRUE(torch::equal(odd, odd_before));
  }
}

TEST(OneDnnPacking, AStoreWeightIsPackedAtItsFirstLinearAndReadPlainElsewhere) {
  if (!have_onednn_bf16()) GTEST_SKIP() << "no native bf16 products on this CPU: " << onednn_description();
  torch::manual_seed(12);
  WeightStore store(torch::kBFloat16);
  const torch::Tensor w = torch::randn({128, 64}).to(torch::kBFloat16), original = w.clone();
  store.add("proj.weight", w);
  store.add("proj32.weight", torch::randn({128, 64}));
  const torch::Tensor x = torch::randn({7, 64}).to(torch::kBFloat16);
  EXPECT_FALSE(store.packed_linear("proj.weight", x, {}).has_value()) << "off until the engine enables it";
  store.enable_cpu_packing();
  const torch::Tensor want = onednn_bf16_linear(x, original, {});
  for (int use = 0; use < 2; ++use) {
    std::optional<torch::Tensor> y = store.packed_linear("proj.weight", x, {});
    ASSERT_TRUE(y.has_value());
    EXPECT_TRUE(torch::equal(*y, want)) << "use " << use;
  }
  EXPECT_FALSE(torch::equal(*store.dense("proj.weight"), original)) << "packed where it lies";
  EXPECT_EQ(store.nbytes(), 128 * 64 * 2 + 128 * 64 * 4) << "in the bytes admitted";
  absl::StatusOr<torch::Tensor> plain = store.at_compute_dtype("proj.weight");
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(torch::equal(*plain, original));
  EXPECT_FALSE(store.packed_linear("proj32.weight", x, {}).has_value()) << "a float32 weight stays plain";
  // An FP8 weight: its codes packed, decoded each forward into the packed
  // bf16 weight.
  const torch::Tensor codes = torch::randint(0, 0x7F, {128, 64}, torch::kUInt8), codes_before = codes.clone();
  store.add("fp8.weight", Fp8Weight{codes, 0.5f, Fp8Format::kE4M3Fn});
  absl::StatusOr<torch::Tensor> fp8_plain = store.at_compute_dtype("fp8.weight");
  ASSERT_TRUE(fp8_plain.ok());
  const torch::Tensor fp8_want = onednn_bf16_linear(x, *fp8_plain, {});
  std::optional<torch::Tensor> fp8_y = store.packed_linear("fp8.weight", x, {});
  ASSERT_TRUE(fp8_y.has_value());
  EXPECT_TRUE(torch::equal(*fp8_y, fp8_want));
  EXPECT_FALSE(torch::equal(store.fp8("fp8.weight")->codes, codes_before)) << "the codes packed where they lie";
  absl::StatusOr<torch::Tensor> fp8_after = store.materialize("fp8.weight", torch::kFloat32);
  ASSERT_TRUE(fp8_after.ok());
  EXPECT_TRUE(torch::equal(*fp8_after, *Fp8Weight{codes_before, 0.5f, Fp8Format::kE4M3Fn}.decode(torch::kFloat32)));
  EXPECT_FALSE(store.packed_linear("absent.weight", x, {}).has_value());
}

}  // namespace
}  // namespace diffusiond
