// The fused CPU paths of layers.h against the same formulas composed from
// libtorch ops, which is what upstream runs, and SwiGLU's gate, which the
// CPU runs as those ops. Sums of squares are added in another order, so
// float32 results agree to float32 rounding; bfloat16 ones are the float32
// result of the widened inputs, rounded once.
#include "core/models/common/layers.h"

#include <torch/utils.h>

#include <cmath>

#include "gtest/gtest.h"

namespace diffusiond {
namespace {

torch::Tensor reference_rms_norm(const torch::Tensor& x, const torch::Tensor& w, double eps) {
  const torch::Tensor x32 = x.to(torch::kFloat32);
  return (x32 * torch::rsqrt(x32.pow(2).mean(-1, true) + eps)).to(x.scalar_type()) * w;
}

double max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

class FusedLayers : public ::testing::Test {
 protected:
  void SetUp() override { torch::manual_seed(21); }
  // Activations of several magnitudes, as a block's input and output are.
  const torch::Tensor x = torch::randn({2, 37, 96}) * 3;
  const torch::Tensor h = torch::randn({2, 37, 96});
  const torch::Tensor w = torch::randn({96}) * 0.2 + 1;
  const torch::Tensor scale = torch::randn({2, 1, 96}) * 0.1 + 1;
  const torch::Tensor gate = torch::randn({2, 1, 96}).tanh();
};

TEST_F(FusedLayers, RmsNormMatchesTheComposedOps) {
  EXPECT_LT(max_diff(rms_norm(x, w, 1e-5), reference_rms_norm(x, w, 1e-5)), 2e-6);
}

TEST_F(FusedLayers, ScaledRmsNormMatchesTheComposedOps) {
  EXPECT_LT(max_diff(rms_norm_scaled(x, w, 1e-5, scale), reference_rms_norm(x, w, 1e-5) * scale), 2e-6);
}

TEST_F(FusedLayers, GatedResidualMatchesTheComposedOps) {
  EXPECT_LT(max_diff(add_gated_rms_norm(x, h, w, 1e-5, gate), x + gate * reference_rms_norm(h, w, 1e-5)), 4e-6);
  EXPECT_LT(max_diff(add_gated_rms_norm(x, h, w, 1e-5, torch::Tensor()), x + reference_rms_norm(h, w, 1e-5)),
            4e-6);
}

// LayerNorm's moments are taken in two passes, so a mean far from zero
// (the rows here sit at 5 +- 3) costs no precision.
TEST_F(FusedLayers, ModulatedLayerNormMatchesTheComposedOps) {
  const torch::Tensor shifted = x + 5, shift = torch::randn({2, 1, 96}) * 0.5;
  const auto composed = [](const torch::Tensor& in, const torch::Tensor& sc, const torch::Tensor& sh) {
    return torch::layer_norm(in, {in.size(-1)}, {}, {}, 1e-6) * (1 + sc) + sh;
  };
  EXPECT_LT(max_diff(modulated_layer_norm(shifted, scale, shift, 1e-6), composed(shifted, scale, shift)), 4e-6);
  // Per token (Qwen-Image's zero_cond_t), alone or beside a per-item vector.
  const torch::Tensor token_scale = torch::randn({2, 37, 96}) * 0.1;
  EXPECT_LT(max_diff(modulated_layer_norm(shifted, token_scale, shift, 1e-6), composed(shifted, token_scale, shift)),
            4e-6);
  // A token's row is the per-item result where its modulation is the item's.
  const torch::Tensor item_rows = scale.expand({2, 37, 96}).contiguous();
  EXPECT_TRUE(
      modulated_layer_norm(shifted, item_rows, shift, 1e-6).equal(modulated_layer_norm(shifted, scale, shift, 1e-6)));
  // bf16: the float32 path on the widened inputs, rounded once.
  const auto bf16 = [](const torch::Tensor& t) { return t.to(torch::kBFloat16); };
  const auto wide = [](const torch::Tensor& t) { return t.to(torch::kBFloat16).to(torch::kFloat32); };
  const torch::Tensor got = modulated_layer_norm(bf16(shifted), bf16(scale), bf16(shift), 1e-6);
  EXPECT_EQ(got.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(got.equal(bf16(modulated_layer_norm(wide(shifted), wide(scale), wide(shift), 1e-6))));
}

// Under bf16 compute the fused loops widen each row, compute as float32 and
// round once: bit for bit the float32 path on the widened inputs, rounded.
TEST_F(FusedLayers, Bfloat16IsTheFloat32ResultRoundedOnce) {
  const auto bf16 = [](const torch::Tensor& t) { return t.to(torch::kBFloat16); };
  const auto wide = [](const torch::Tensor& t) { return t.to(torch::kBFloat16).to(torch::kFloat32); };
  const torch::Tensor xb = bf16(x), hb = bf16(h), wb = bf16(w), sb = bf16(scale), gb = bf16(gate);
  const torch::Tensor got = rms_norm(xb, wb, 1e-5);
  EXPECT_EQ(got.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(got.equal(bf16(rms_norm(wide(x), wide(w), 1e-5))));
  EXPECT_TRUE(rms_norm_scaled(xb, wb, 1e-5, sb).equal(bf16(rms_norm_scaled(wide(x), wide(w), 1e-5, wide(scale)))));
  EXPECT_TRUE(add_gated_rms_norm(xb, hb, wb, 1e-5, gb)
                  .equal(bf16(add_gated_rms_norm(wide(x), wide(h), wide(w), 1e-5, wide(gate)))));
  // The weights may be float32 beside bf16 activations (modules kept in float32).
  EXPECT_TRUE(rms_norm(xb, w, 1e-5).equal(bf16(rms_norm(wide(x), w, 1e-5))));
  // One rounding: each element within bf16's unit roundoff (2^-8 of its
  // magnitude) of the float32 result, where composed bf16 ops round after
  // every op.
  const torch::Tensor exact = reference_rms_norm(wide(x), wide(w), 1e-5).to(torch::kFloat64);
  EXPECT_TRUE(((got.to(torch::kFloat64) - exact).abs() <= exact.abs() * std::ldexp(1.0, -8)).all().item<bool>());
  // A NaN stays a NaN (c10's quiet NaN), as `.to(kBFloat16)` makes it.
  torch::Tensor with_nan = xb.clone();
  with_nan[0][0][0] = std::nanf("");
  EXPECT_TRUE(rms_norm(with_nan, wb, 1e-5)[0][0].isnan().all().item<bool>());
}

TEST_F(FusedLayers, HalfPrecisionTakesTheComposedOps) {
  const torch::Tensor xh = x.to(torch::kFloat16), wh = w.to(torch::kFloat16);
  EXPECT_TRUE(rms_norm(xh, wh, 1e-5).equal(reference_rms_norm(xh, wh, 1e-5)));
  EXPECT_EQ(add_gated_rms_norm(xh, h.to(torch::kFloat16), wh, 1e-5, gate.to(torch::kFloat16)).scalar_type(),
            torch::kFloat16);
}

TEST(NormRopeHeads, MatchesNormThenRopeThenTranspose) {
  torch::manual_seed(22);
  const int64_t batch = 2, seq = 11, heads = 3, dim = 8;
  const torch::Tensor x = torch::randn({batch, seq, heads, dim});
  const torch::Tensor angles = torch::rand({batch, seq, dim / 2}) * 6;
  const torch::Tensor cos = angles.cos(), sin = angles.sin(), w = torch::rand({dim}) + 0.5;
  const torch::Tensor got = norm_rope_heads(x, w, 1e-5, cos, sin);
  EXPECT_EQ(got.sizes(), torch::IntArrayRef({batch, heads, seq, dim}));
  EXPECT_TRUE(got.is_contiguous());
  const torch::Tensor want = apply_rope(reference_rms_norm(x, w, 1e-5), cos, sin).transpose(1, 2);
  EXPECT_LT(max_diff(got, want), 2e-6);
  // Without a norm weight the rotation alone, exactly.
  EXPECT_TRUE(norm_rope_heads(x, torch::Tensor(), 1e-5, cos, sin).equal(apply_rope(x, cos, sin).transpose(1, 2)));
  // bf16 activations: the float32 path on the widened input, rounded once.
  const torch::Tensor xb = x.to(torch::kBFloat16), wb = w.to(torch::kBFloat16);
  const torch::Tensor got_bf16 = norm_rope_heads(xb, wb, 1e-5, cos, sin);
  EXPECT_EQ(got_bf16.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(got_bf16.equal(
      norm_rope_heads(xb.to(torch::kFloat32), wb.to(torch::kFloat32), 1e-5, cos, sin).to(torch::kBFloat16)));
}

// On the CPU silu_mul_ is libtorch's silu_ then mul_, over the gate's own
// storage: the feed-forwards rely on it allocating nothing of the hidden
// width.
TEST(SiluMul, WritesSiluOfTheGateTimesUpOverTheGate) {
  torch::manual_seed(25);
  for (const torch::ScalarType dtype : {torch::kFloat32, torch::kBFloat16}) {
    const torch::Tensor a = (torch::randn({2, 37, 160}) * 4).to(dtype), b = torch::randn({2, 37, 160}).to(dtype);
    torch::Tensor gate = a.clone();
    const void* storage = gate.data_ptr();
    const torch::Tensor got = silu_mul_(gate, b);
    EXPECT_EQ(got.data_ptr(), storage);
    EXPECT_TRUE(gate.equal(got));
    EXPECT_TRUE(got.equal(torch::silu(a) * b));
  }
  // A strided gate is written in place too.
  torch::Tensor wide = torch::randn({5, 8});
  const torch::Tensor before = wide.clone(), up = torch::randn({5, 4});
  silu_mul_(wide.narrow(1, 2, 4), up);
  EXPECT_TRUE(wide.narrow(1, 2, 4).equal(torch::silu(before.narrow(1, 2, 4)) * up));
  EXPECT_TRUE(wide.narrow(1, 0, 2).equal(before.narrow(1, 0, 2)));
}

}  // namespace
}  // namespace diffusiond
