// The fused norm and RoPE loops on a CUDA device (kernels/cuda/norm_rope.cu,
// reached through layers.h as a forward reaches them) against the CPU loops,
// which layers_test.cc checks against the composed libtorch ops; and SwiGLU's
// gate (kernels/cuda/swiglu.cu) against the float32 product rounded once. A
// row's sum of squares is added in another order on the device, so normed
// results agree to float32 rounding, and bfloat16 ones to within one
// bfloat16 unit, almost all bit for bit; the rotation alone is the CPU's bit
// for bit.
// Skips without a CUDA device.
#include <torch/types.h>
#include <torch/utils.h>

#include <cmath>

#include "core/models/common/layers.h"
#include "gtest/gtest.h"
#include "tests/testing/cuda_device.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::no_cuda_reason;

torch::Tensor cuda(const torch::Tensor& t) { return t.to(torch::kCUDA); }

// Fails unless `got` (any device) is `want` (CPU, float32 or bfloat16) to
// float32 rounding of a long sum, or to one bfloat16 unit with at most 1% of
// the elements off at all. The bound is relative to each element plus the
// tensor's largest: a residual or shift may cancel an element to near zero,
// where the rounding of the terms that cancelled remains. NaN must meet NaN.
void expect_close(const torch::Tensor& got, const torch::Tensor& want, const char* what) {
  ASSERT_EQ(got.scalar_type(), want.scalar_type()) << what;
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  const torch::Tensor g = got.to(torch::kCPU).to(torch::kFloat64), w = want.to(torch::kFloat64);
  EXPECT_TRUE(g.isnan().equal(w.isnan())) << what;
  const torch::Tensor finite = ~w.isnan();
  const torch::Tensor diff = (g - w).abs().masked_select(finite), size = w.abs().masked_select(finite);
  const bool bf16 = want.scalar_type() == torch::kBFloat16;
  // 3840 squares summed in two orders differ by up to ~1e-6 relative.
  const double unit = bf16 ? std::ldexp(1.0, -7) : 4e-6;
  const double largest = size.numel() > 0 ? size.max().item<double>() : 0.0;
  EXPECT_TRUE((diff <= (size + largest * (bf16 ? 1.0 / 128 : 1.0)) * unit).all().item<bool>())
      << what << ": largest difference " << diff.max().item<double>();
  if (bf16) {
    EXPECT_LE((diff > 0).sum().item<int64_t>(), diff.numel() / 100) << what;
  }
}

class FusedLayersCuda : public ::testing::TestWithParam<torch::ScalarType> {
 protected:
  void SetUp() override {
    if (const std::string why = no_cuda_reason(); !why.empty()) GTEST_SKIP() << why;
    torch::manual_seed(23);
  }
  torch::ScalarType dtype() const { return GetParam(); }
  torch::Tensor act(std::vector<int64_t> shape, double magnitude) const {
    return (torch::randn(shape) * magnitude).to(dtype());
  }
};

// A small odd-sized row and a real-size one (Z-Image's 3840), more rows
// than a block has threads.
TEST_P(FusedLayersCuda, RmsNormsMatchTheCpuLoops) {
  for (const int64_t dim : {96, 3840}) {
    const torch::Tensor x = act({2, 301, dim}, 3), h = act({2, 301, dim}, 1);
    const torch::Tensor w = (torch::randn({dim}) * 0.2 + 1).to(dtype());
    const torch::Tensor scale = (torch::randn({2, 1, dim}) * 0.1 + 1).to(dtype());
    const torch::Tensor gate = torch::randn({2, 1, dim}).tanh().to(dtype());
    expect_close(rms_norm(cuda(x), cuda(w), 1e-6), rms_norm(x, w, 1e-6), "rms_norm");
    expect_close(rms_norm_scaled(cuda(x), cuda(w), 1e-6, cuda(scale)), rms_norm_scaled(x, w, 1e-6, scale),
                 "rms_norm_scaled");
    expect_close(add_gated_rms_norm(cuda(x), cuda(h), cuda(w), 1e-6, cuda(gate)),
                 add_gated_rms_norm(x, h, w, 1e-6, gate), "add_gated_rms_norm");
    expect_close(add_gated_rms_norm(cuda(x), cuda(h), cuda(w), 1e-6, torch::Tensor()),
                 add_gated_rms_norm(x, h, w, 1e-6, torch::Tensor()), "add_gated_rms_norm without a gate");
    // float32 weights beside bf16 activations (modules kept in float32).
    const torch::Tensor w32 = w.to(torch::kFloat32);
    expect_close(rms_norm(cuda(x), cuda(w32), 1e-6), rms_norm(x, w32, 1e-6), "rms_norm, float32 weight");
  }
}

// A small width and FLUX's and Qwen-Image's, rows sitting away from zero.
TEST_P(FusedLayersCuda, ModulatedLayerNormsMatchTheCpuLoops) {
  for (const int64_t dim : {96, 3072}) {
    const torch::Tensor x = (torch::randn({2, 301, dim}) * 3 + 5).to(dtype());
    const torch::Tensor scale = (torch::randn({2, 1, dim}) * 0.1).to(dtype());
    const torch::Tensor shift = (torch::randn({2, 1, dim}) * 0.5).to(dtype());
    expect_close(modulated_layer_norm(cuda(x), cuda(scale), cuda(shift), 1e-6),
                 modulated_layer_norm(x, scale, shift, 1e-6), "modulated_layer_norm");
    // Per token (Qwen-Image's zero_cond_t) beside a per-item shift.
    const torch::Tensor token_scale = (torch::randn({2, 301, dim}) * 0.1).to(dtype());
    expect_close(modulated_layer_norm(cuda(x), cuda(token_scale), cuda(shift), 1e-6),
                 modulated_layer_norm(x, token_scale, shift, 1e-6), "modulated_layer_norm per token");
  }
}

TEST_P(FusedLayersCuda, ANanRowStaysNanAndOthersAreUntouched) {
  torch::Tensor x = act({1, 5, 64}, 1);
  x[0][2][7] = std::nanf("");
  const torch::Tensor w = torch::ones({64}).to(dtype());
  const torch::Tensor got = rms_norm(cuda(x), cuda(w), 1e-6).cpu();
  EXPECT_TRUE(got[0][2].isnan().all().item<bool>());
  expect_close(got.narrow(1, 0, 2), rms_norm(x, w, 1e-6).narrow(1, 0, 2), "rows before the NaN");
}

// Z-Image's heads (30 of 128) over more rows than the grid's first wave.
TEST_P(FusedLayersCuda, NormRopeHeadsMatchTheCpuLoops) {
  const int64_t batch = 2, seq = 77, heads = 30, dim = 128;
  const torch::Tensor x = act({batch, seq, heads, dim}, 2);
  const torch::Tensor angles = torch::rand({batch, seq, dim / 2}) * 60;
  const torch::Tensor cos = angles.cos(), sin = angles.sin();
  const torch::Tensor w = (torch::rand({dim}) + 0.5).to(dtype());
  const torch::Tensor got = norm_rope_heads(cuda(x), cuda(w), 1e-6, cuda(cos), cuda(sin));
  EXPECT_EQ(got.device().type(), torch::kCUDA);
  EXPECT_TRUE(got.is_contiguous());
  expect_close(got, norm_rope_heads(x, w, 1e-6, cos, sin), "norm_rope_heads");
  // The rotation alone has no reduction: the CPU's bits.
  EXPECT_TRUE(norm_rope_heads(cuda(x), torch::Tensor(), 1e-6, cuda(cos), cuda(sin))
                  .cpu()
                  .equal(norm_rope_heads(x, torch::Tensor(), 1e-6, cos, sin)));
}

// SwiGLU's gate: the float32 product of the widened inputs, rounded once.
// Sizes with a tail after the 16-byte vectors, a real-size hidden row
// (Z-Image's 10240), and a gate one element into its storage, which the
// vectors cannot read aligned.
TEST_P(FusedLayersCuda, SiluMulIsTheFloat32ProductRoundedOnce) {
  for (const int64_t n : {int64_t{3}, int64_t{301}, int64_t{2} * 10240 + 5}) {
    const torch::Tensor a = act({n}, 4), b = act({n}, 1);
    const torch::Tensor want = (torch::silu(a.to(torch::kFloat32)) * b.to(torch::kFloat32)).to(dtype());
    torch::Tensor gate = cuda(a);
    const void* storage = gate.data_ptr();
    const torch::Tensor got = silu_mul_(gate, cuda(b));
    EXPECT_EQ(got.data_ptr(), storage) << n;
    expect_close(got, want, "silu_mul_");
    torch::Tensor offset = cuda(torch::cat({act({1}, 1), a}));
    silu_mul_(offset.narrow(0, 1, n), cuda(b));
    expect_close(offset.narrow(0, 1, n), want, "silu_mul_ on an unaligned gate");
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, FusedLayersCuda, ::testing::Values(torch::kFloat32, torch::kBFloat16),
                         [](const ::testing::TestParamInfo<torch::ScalarType>& info) {
                           return std::string(c10::toString(info.param));
                         });

// float16 is not fused on the device either: the composed ops, as upstream.
TEST(FusedLayersCudaHalf, TakesTheComposedOps) {
  if (const std::string why = no_cuda_reason(); !why.empty()) GTEST_SKIP() << why;
  torch::manual_seed(24);
  const torch::Tensor x = cuda(torch::randn({2, 9, 32}).to(torch::kFloat16));
  const torch::Tensor w = cuda(torch::rand({32}).to(torch::kFloat16) + 0.5);
  const torch::Tensor x32 = x.to(torch::kFloat32);
  const torch::Tensor composed = (x32 * torch::rsqrt(x32.pow(2).mean(-1, true) + 1e-6)).to(torch::kFloat16) * w;
  EXPECT_TRUE(rms_norm(x, w, 1e-6).equal(composed));
  const torch::Tensor up = cuda(torch::randn({2, 9, 32}).to(torch::kFloat16));
  EXPECT_TRUE(silu_mul_(x.clone(), up).equal(torch::silu(x) * up));
}

}  // namespace
}  // namespace diffusiond
