// scaled_fp8_linear (an FP8 tensor-core matmul through at::_scaled_mm)
// against the upcast path it replaces, on random data, and the arguments it
// must decline so that callers upcast. Needs an sm_89+ device and libtorch
// >= 2.5 with CUDA; skips saying which is missing.
//
// Tolerances, as mean |error| / mean |value| over the output:
// - 0.05 against the upcast path (weight decoded, activation unrounded).
//   Rounding the activation to e4m3fn (3 mantissa bits) moves each element
//   by up to 2^-4 of itself, about 2.7% RMS; over a dot product of
//   independent errors the output moves by about the same fraction. A wrong
//   scale, transpose or bias moves it by ~100%.
// - 0.01 against the same activation rounding done here in float32: then
//   only the summation order and the output's rounding (bf16: 2^-9) differ.
#include <torch/types.h>
#include <torch/utils.h>

#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/fp8_codec.h"
#include "kernels/scaled_fp8_linear.h"
#include "kernels/torch_compat.h"
#include "tests/testing/cuda_device.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::cuda_options;
using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::no_cuda_reason;
using ::testing::HasSubstr;
using ::testing::NotNull;

constexpr float kE4M3Max = 448.0f;

// Why this machine cannot run _scaled_mm, or "" when it can.
std::string no_scaled_mm_reason() {
  if (std::string why = no_cuda_reason(); !why.empty()) return why;
  if (!compat::kHaveScaledMm) return "libtorch is older than 2.5: no at::_scaled_mm as called";
  const int capability = compat::cuda_compute_capability(0);
  if (capability < 89) {
    return "device capability " + std::to_string(capability) + " is below 8.9 (sm_89)";
  }
  return "";
}

// An e4m3fn weight: codes on the GPU and their per-tensor scale.
struct QuantizedWeight {
  torch::Tensor codes;
  float scale = 1.0f;
};

QuantizedWeight quantize_weight(const torch::Tensor& w) {
  QuantizedWeight out;
  out.scale = w.abs().max().item<float>() / kE4M3Max;
  out.codes = torch::empty(w.sizes(), w.options().dtype(torch::kUInt8));
  EXPECT_THAT(fp8_encode(w.contiguous(), Fp8Format::kE4M3Fn, 1.0f / out.scale, out.codes),
              IsOk());
  return out;
}

// The weight as the upcast path sees it: decode(codes) * scale, float32.
torch::Tensor upcast(const QuantizedWeight& w) {
  torch::Tensor out = torch::empty(w.codes.sizes(), w.codes.options().dtype(torch::kFloat32));
  EXPECT_THAT(fp8_decode(w.codes, Fp8Format::kE4M3Fn, w.scale, out), IsOk());
  return out;
}

// x rounded to e4m3fn as the contract states (scale max|x| / 448), back in
// float32.
torch::Tensor round_activation(const torch::Tensor& x) {
  const torch::Tensor x32 = x.to(torch::kFloat32).contiguous();
  const torch::Tensor scale = x32.abs().max() / kE4M3Max;
  const torch::Tensor scaled = (x32 / scale).clamp(-kE4M3Max, kE4M3Max).contiguous();
  torch::Tensor codes = torch::empty(scaled.sizes(), scaled.options().dtype(torch::kUInt8));
  EXPECT_THAT(fp8_encode(scaled, Fp8Format::kE4M3Fn, 1.0f, codes), IsOk());
  torch::Tensor decoded = torch::empty(scaled.sizes(), scaled.options());
  EXPECT_THAT(fp8_decode(codes, Fp8Format::kE4M3Fn, 1.0f, decoded), IsOk());
  return decoded * scale;
}

double relative_error(const torch::Tensor& got, const torch::Tensor& want) {
  const torch::Tensor w = want.to(torch::kFloat64);
  return (got.to(torch::kFloat64) - w).abs().mean().item<double>() / w.abs().mean().item<double>();
}

struct LinearCase {
  torch::ScalarType x_dtype;
  torch::ScalarType out_dtype;
  bool bias;
};

// Names a case in test names, e.g. "BFloat16_to_Float_with_bias".
std::string case_name(const LinearCase& c) {
  return std::string(c10::toString(c.x_dtype)) + "_to_" + c10::toString(c.out_dtype) +
         (c.bias ? "_with_bias" : "");
}

void PrintTo(const LinearCase& c, std::ostream* os) { *os << case_name(c); }

class ScaledMmCudaLinear : public ::testing::TestWithParam<LinearCase> {
 protected:
  void SetUp() override {
    if (const std::string why = no_scaled_mm_reason(); !why.empty()) GTEST_SKIP() << why;
  }
};

TEST_P(ScaledMmCudaLinear, MatchesTheUpcastPathOnRandomData) {
  const LinearCase& c = GetParam();
  torch::manual_seed(20240611);
  // 37 rows: _scaled_mm needs only k and n to be multiples of 16.
  const torch::Tensor x = torch::randn({2, 37, 256}, cuda_options(torch::kFloat32)).to(c.x_dtype);
  const QuantizedWeight w = quantize_weight(torch::randn({384, 256}, cuda_options(torch::kFloat32)) * 0.05);
  const torch::Tensor bias =
      c.bias ? torch::randn({384}, cuda_options(torch::kFloat32)).to(c.out_dtype) : torch::Tensor();
  ASSERT_EQ(scaled_fp8_linear_unavailable_reason(x, w.codes, c.out_dtype), nullptr)
      << scaled_fp8_linear_unavailable_reason(x, w.codes, c.out_dtype);

  const std::optional<torch::Tensor> y = scaled_fp8_linear(x, w.codes, w.scale, bias, c.out_dtype);
  ASSERT_TRUE(y.has_value());
  EXPECT_EQ(y->sizes().vec(), (std::vector<int64_t>{2, 37, 384}));
  EXPECT_EQ(y->scalar_type(), c.out_dtype);
  const torch::Tensor bias32 = c.bias ? bias.to(torch::kFloat32) : torch::Tensor();

  const torch::Tensor upcast_path = torch::linear(x.to(torch::kFloat32), upcast(w), bias32);
  EXPECT_LT(relative_error(*y, upcast_path), 0.05);

  const torch::Tensor same_rounding = torch::linear(round_activation(x), upcast(w), bias32);
  EXPECT_LT(relative_error(*y, same_rounding), 0.01);
}

// cuBLAS's fast accumulation (PlacementOptions::fp8_fast_accum) sums in
// reduced precision between promotions; over a real model's 4096-long
// rows it must still be near the exact sum of the same codes.
TEST(ScaledMmCuda, FastAccumulationStaysNearTheExactSum) {
  if (const std::string why = no_scaled_mm_reason(); !why.empty()) GTEST_SKIP() << why;
  torch::manual_seed(11);
  const torch::Tensor x = torch::randn({64, 4096}, cuda_options(torch::kBFloat16));
  const QuantizedWeight w = quantize_weight(torch::randn({256, 4096}, cuda_options(torch::kFloat32)) * 0.02);
  const std::optional<torch::Tensor> fast =
      scaled_fp8_linear(x, w.codes, w.scale, torch::Tensor(), torch::kBFloat16, /*fast_accum=*/true);
  ASSERT_TRUE(fast.has_value());
  EXPECT_LT(relative_error(*fast, torch::linear(round_activation(x), upcast(w))), 0.02);
}

// In 100 and out 24 features, padded to 112 and 32 inside: the same
// tolerances, with the bias (not fused then) added after.
TEST(ScaledMmCuda, PadsFeaturesThatAreNotMultiplesOf16) {
  if (const std::string why = no_scaled_mm_reason(); !why.empty()) GTEST_SKIP() << why;
  torch::manual_seed(7);
  const torch::Tensor x = torch::randn({37, 100}, cuda_options(torch::kBFloat16));
  const QuantizedWeight w = quantize_weight(torch::randn({24, 100}, cuda_options(torch::kFloat32)) * 0.05);
  const torch::Tensor bias = torch::randn({24}, cuda_options(torch::kBFloat16));
  ASSERT_EQ(scaled_fp8_linear_unavailable_reason(x, w.codes, torch::kBFloat16), nullptr);
  const std::optional<torch::Tensor> y = scaled_fp8_linear(x, w.codes, w.scale, bias, torch::kBFloat16);
  ASSERT_TRUE(y.has_value());
  EXPECT_EQ(y->sizes().vec(), (std::vector<int64_t>{37, 24}));
  const torch::Tensor bias32 = bias.to(torch::kFloat32);
  EXPECT_LT(relative_error(*y, torch::linear(x.to(torch::kFloat32), upcast(w), bias32)), 0.05);
  EXPECT_LT(relative_error(*y, torch::linear(round_activation(x), upcast(w), bias32)), 0.01);
}

INSTANTIATE_TEST_SUITE_P(
    Dtypes, ScaledMmCudaLinear,
    ::testing::Values(LinearCase{torch::kBFloat16, torch::kBFloat16, true},
                      LinearCase{torch::kBFloat16, torch::kFloat32, true},  // bias added after
                      LinearCase{torch::kFloat16, torch::kFloat16, true},
                      LinearCase{torch::kFloat32, torch::kBFloat16, false},
                      LinearCase{torch::kFloat32, torch::kFloat32, false}),
    [](const auto& info) { return case_name(info.param); });

TEST(ScaledMmCuda, DeclinesShapesAndDtypesItCannotRun) {
  if (const std::string why = no_cuda_reason(); !why.empty()) GTEST_SKIP() << why;
  const bool supported = no_scaled_mm_reason().empty();
  const torch::Tensor x = torch::randn({4, 64}, cuda_options(torch::kBFloat16));
  const torch::Tensor codes = torch::zeros({32, 64}, cuda_options(torch::kUInt8));
  struct Case {
    const char* what;
    torch::Tensor x;
    torch::Tensor codes;
    torch::ScalarType out_dtype;
    const char* reason;  // a substring of the reason on an sm_89+ device
  };
  const Case cases[] = {
      {"float64 input", x.to(torch::kFloat64), codes, torch::kBFloat16, "input dtype"},
      {"float64 output", x, codes, torch::kFloat64, "output dtype"},
      {"int8 codes", x, codes.to(torch::kInt8), torch::kBFloat16, "uint8"},
      {"transposed codes", x, torch::zeros({64, 32}, cuda_options(torch::kUInt8)).t(), torch::kBFloat16, "contiguous"},
      {"in features differ", torch::randn({4, 48}, cuda_options(torch::kBFloat16)), codes, torch::kBFloat16,
       "last dimension"},
      {"input on the CPU", x.cpu(), codes, torch::kBFloat16, "CUDA device"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const char* reason = scaled_fp8_linear_unavailable_reason(c.x, c.codes, c.out_dtype);
    ASSERT_THAT(reason, NotNull());
    if (supported) {
      EXPECT_THAT(std::string(reason), HasSubstr(c.reason));
    }
    EXPECT_FALSE(scaled_fp8_linear(c.x, c.codes, 1.0f, torch::Tensor(), c.out_dtype).has_value());
  }
}

// Runs everywhere: without CUDA every call is declined, naming why.
TEST(ScaledFp8Linear, DeclinesCpuTensors) {
  const torch::Tensor x = torch::randn({4, 64});
  const torch::Tensor codes = torch::zeros({32, 64}, torch::kUInt8);
  const char* reason = scaled_fp8_linear_unavailable_reason(x, codes, torch::kBFloat16);
  ASSERT_THAT(reason, NotNull());
  if (!compat::kHaveCuda) {
    EXPECT_THAT(std::string(reason), HasSubstr("no CUDA kernels"));
  }
  EXPECT_FALSE(scaled_fp8_linear(x, codes, 1.0f, torch::Tensor(), torch::kBFloat16).has_value());
}

}  // namespace
}  // namespace diffusiond
