// The vectorised, threaded CPU codec against the scalar reference: every
// bf16 and fp16 input, millions of float32 bit patterns, scales, every
// decode code into each output type, and the per-tensor quantiser.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include "gtest/gtest.h"
#include "kernels/fp8_cpu.h"

namespace diffusiond {
namespace {

class Fp8Cpu : public ::testing::TestWithParam<Fp8Format> {};

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

void expect_same_codes(const std::vector<uint8_t>& got, const std::vector<float>& inputs,
                       Fp8Format format, float inv_scale) {
  int mismatches = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const uint8_t want = fp8_encode_ref(inputs[i] * inv_scale, format);
    if (got[i] != want && ++mismatches <= 5) {
      ADD_FAILURE() << "input " << inputs[i] << " (index " << i << "): 0x" << std::hex
                    << int{got[i]} << ", reference 0x" << int{want};
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST_P(Fp8Cpu, EncodesEveryBf16PatternLikeTheReference) {
  std::vector<uint16_t> src(65536);
  std::vector<float> values(65536);
  for (uint32_t i = 0; i < 65536; ++i) {
    src[i] = static_cast<uint16_t>(i);
    values[i] = from_bits(i << 16);
  }
  std::vector<uint8_t> codes(src.size());
  fp8_encode_cpu(src.data(), FloatKind::kBF16, src.size(), GetParam(), 1.0f, codes.data());
  expect_same_codes(codes, values, GetParam(), 1.0f);
}

TEST_P(Fp8Cpu, EncodesEveryFp16PatternLikeTheReference) {
  std::vector<uint16_t> src(65536);
  std::vector<float> values(65536);
  for (uint32_t i = 0; i < 65536; ++i) {
    src[i] = static_cast<uint16_t>(i);
    values[i] = c10::detail::fp16_ieee_to_fp32_value(src[i]);
  }
  std::vector<uint8_t> codes(src.size());
  fp8_encode_cpu(src.data(), FloatKind::kF16, src.size(), GetParam(), 1.0f, codes.data());
  expect_same_codes(codes, values, GetParam(), 1.0f);
}

TEST_P(Fp8Cpu, EncodesRandomFloat32PatternsWithScaleLikeTheReference) {
  std::mt19937 rng(20240611);
  std::vector<float> values(4 << 20);
  for (float& v : values) v = from_bits(static_cast<uint32_t>(rng()));
  for (float inv_scale : {1.0f, 1.0f / 0.0123f, 3.5f}) {
    std::vector<uint8_t> codes(values.size());
    fp8_encode_cpu(values.data(), FloatKind::kF32, values.size(), GetParam(), inv_scale,
                   codes.data());
    expect_same_codes(codes, values, GetParam(), inv_scale);
  }
}

TEST_P(Fp8Cpu, DecodesEveryCodeIntoEachOutputType) {
  std::vector<uint8_t> codes(256 * 1024);  // several chunks, so threads split it
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint8_t>(i);
  const float scale = 0.03125f * 3;
  std::vector<float> f32(codes.size());
  std::vector<c10::BFloat16> bf16(codes.size());
  std::vector<c10::Half> f16(codes.size());
  fp8_decode_cpu(codes.data(), codes.size(), GetParam(), scale, FloatKind::kF32, f32.data());
  fp8_decode_cpu(codes.data(), codes.size(), GetParam(), scale, FloatKind::kBF16, bf16.data());
  fp8_decode_cpu(codes.data(), codes.size(), GetParam(), scale, FloatKind::kF16, f16.data());
  for (size_t i = 0; i < codes.size(); ++i) {
    const float want = fp8_decode_ref(codes[i], GetParam()) * scale;
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(f32[i]) && std::isnan(float(bf16[i])) && std::isnan(float(f16[i])));
      continue;
    }
    ASSERT_EQ(f32[i], want) << "code " << int{codes[i]};
    ASSERT_EQ(float(bf16[i]), float(c10::BFloat16(want))) << "code " << int{codes[i]};
    ASSERT_EQ(float(f16[i]), float(c10::Half(want))) << "code " << int{codes[i]};
  }
}

// The 16-bit decodes go 32 codes at a time where the CPU has AVX-512BW:
// a start off any alignment, a length that leaves a tail, and a negative
// scale (which must not flip a NaN's sign differently from the reference).
TEST_P(Fp8Cpu, DecodesAnUnalignedTailWithANegativeScale) {
  std::vector<uint8_t> buffer(3 + 32 * 7 + 19);
  std::mt19937 rng(7);
  for (uint8_t& c : buffer) c = static_cast<uint8_t>(rng());
  buffer[3 + 32 * 7 + 18] = 0x7F;  // the tail's last: NaN in e4m3fn, infinity in e5m2
  const uint8_t* codes = buffer.data() + 3;
  const size_t n = buffer.size() - 3;
  const float scale = -1.75f;
  std::vector<c10::BFloat16> bf16(n + 1, c10::BFloat16(5.0f));
  std::vector<c10::Half> f16(n);
  fp8_decode_cpu(codes, n, GetParam(), scale, FloatKind::kBF16, bf16.data());
  fp8_decode_cpu(codes, n, GetParam(), scale, FloatKind::kF16, f16.data());
  for (size_t i = 0; i < n; ++i) {
    const float want = fp8_decode_ref(codes[i], GetParam()) * scale;
    uint16_t got_bits, want_bits;
    const c10::BFloat16 want_bf16(want);
    std::memcpy(&got_bits, &bf16[i], 2);
    std::memcpy(&want_bits, &want_bf16, 2);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(float(bf16[i])) && std::isnan(float(f16[i]))) << "code " << int{codes[i]};
      continue;
    }
    ASSERT_EQ(got_bits, want_bits) << "index " << i << ", code " << int{codes[i]};
    ASSERT_EQ(float(f16[i]), float(c10::Half(want))) << "index " << i << ", code " << int{codes[i]};
  }
  EXPECT_EQ(float(bf16[n]), 5.0f) << "nothing written past the end";
}

// Per-tensor quantisation against its rule written out with the scalar
// reference: bf16 values with outliers, a NaN (skipped by the scale, NaN
// in its code) and values whose quotient rounds past the largest finite
// value (saturated).
TEST_P(Fp8Cpu, QuantisesPerTensorByDividingByItsScale) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<c10::BFloat16> src(70001);
  for (c10::BFloat16& v : src) v = c10::BFloat16(normal(rng));
  src[17] = c10::BFloat16(-900.0f);
  src[18] = c10::BFloat16(899.0f);
  src[19] = c10::BFloat16(NAN);
  std::vector<uint8_t> codes(src.size());
  const float scale = fp8_quantize_cpu(src.data(), FloatKind::kBF16, src.size(), GetParam(), 1e-12f, codes.data());
  EXPECT_EQ(scale, 900.0f / fp8_max_finite(GetParam()));
  int mismatches = 0;
  for (size_t i = 0; i < src.size(); ++i) {
    const uint8_t want = fp8_encode_ref(float(src[i]) / scale, GetParam());
    if (codes[i] != want && ++mismatches <= 5) {
      ADD_FAILURE() << "index " << i << " (" << float(src[i]) << "): 0x" << std::hex << int{codes[i]}
                    << ", reference 0x" << int{want};
    }
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_TRUE(std::isnan(fp8_decode_ref(codes[19], GetParam())));
  EXPECT_EQ(fp8_decode_ref(codes[17], GetParam()), -fp8_max_finite(GetParam()));
}

TEST_P(Fp8Cpu, QuantisesZerosAndNothingAtTheLeastScale) {
  std::vector<float> zeros(100, 0.0f);
  std::vector<uint8_t> codes(zeros.size(), 0xAB);
  EXPECT_EQ(fp8_quantize_cpu(zeros.data(), FloatKind::kF32, zeros.size(), GetParam(), 0.25f, codes.data()), 0.25f);
  EXPECT_EQ(codes, std::vector<uint8_t>(zeros.size(), 0));
  EXPECT_EQ(fp8_quantize_cpu(zeros.data(), FloatKind::kF32, 0, GetParam(), 0.25f, codes.data()), 0.25f);
}

TEST(AbsMax, IgnoresNanAndSeesSign) {
  std::vector<float> v = {0.5f, -3.25f, NAN, 2.0f};
  EXPECT_EQ(abs_max_cpu(v.data(), FloatKind::kF32, v.size()), 3.25f);
  EXPECT_EQ(abs_max_cpu(v.data(), FloatKind::kF32, 0), 0.0f);
}

INSTANTIATE_TEST_SUITE_P(Formats, Fp8Cpu,
                         ::testing::Values(Fp8Format::kE4M3Fn, Fp8Format::kE5M2),
                         [](const auto& info) {
                           return info.param == Fp8Format::kE4M3Fn ? "e4m3fn" : "e5m2";
                         });

}  // namespace
}  // namespace diffusiond
