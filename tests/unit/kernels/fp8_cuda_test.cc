// The CUDA FP8 codec (kernels/cuda/fp8_codec.cu, reached through the
// dispatch in kernels/fp8_codec.h) against the exact-arithmetic tables of
// the shared fixtures: every bf16 and fp16 bit pattern encoded from its own
// dtype and from float32, all 256 codes of each format decoded bit for bit
// into float32, bfloat16 and float16; then random float32 patterns with
// scales against the scalar reference, tensors large enough that each
// kernel strides over its whole grid, and the per-tensor quantiser against
// the CPU's. Skips without a CUDA device.
#include <torch/types.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include "gtest/gtest.h"
#include "kernels/fp8_codec.h"
#include "tests/testing/cuda_device.h"
#include "tests/testing/fp8_tables.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::cuda_options;
using ::diffusiond::testing::Fp8EncodeTable;
using ::diffusiond::testing::fp8_decode_table_file;
using ::diffusiond::testing::Fp8TableSource;
using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::kFp8EncodeTables;
using ::diffusiond::testing::no_cuda_reason;
using ::diffusiond::testing::read_fp8_decode_table;
using ::diffusiond::testing::read_fp8_encode_table;

// The decoders' grid is capped at 65535 blocks of 256 threads; more
// elements than that make every thread loop.
constexpr int64_t kGridStrideElements = int64_t{65535} * 256 + 12345;

// Every 16-bit pattern, as a CUDA tensor of `dtype` (bf16 or fp16).
torch::Tensor all_16_bit_patterns(torch::ScalarType dtype) {
  std::vector<int16_t> bits(65536);
  for (uint32_t i = 0; i < bits.size(); ++i) {
    const uint16_t u = static_cast<uint16_t>(i);
    std::memcpy(&bits[i], &u, sizeof(u));
  }
  return torch::from_blob(bits.data(), {65536}, torch::kInt16).view(dtype).to(torch::kCUDA);
}

// Fails the test naming the first mismatching entries of `got` (uint8,
// any device) against `want`.
void expect_codes(const torch::Tensor& got, const std::vector<uint8_t>& want, const char* what) {
  const torch::Tensor host = got.to(torch::kCPU).contiguous();
  ASSERT_EQ(host.numel(), static_cast<int64_t>(want.size())) << what;
  const uint8_t* g = host.data_ptr<uint8_t>();
  int mismatches = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (g[i] != want[i] && ++mismatches <= 5) {
      ADD_FAILURE() << what << ": entry 0x" << std::hex << i << " encodes to 0x" << int{g[i]}
                    << ", expected 0x" << int{want[i]};
    }
  }
  EXPECT_EQ(mismatches, 0) << what;
}

// The bit pattern of each element of a CPU tensor of 2- or 4-byte floats.
std::vector<uint32_t> bit_patterns(const torch::Tensor& t) {
  const torch::Tensor wide =
      t.element_size() == 4 ? t.view(torch::kInt32).to(torch::kInt64)
                            : t.view(torch::kInt16).to(torch::kInt64).bitwise_and(0xFFFF);
  std::vector<uint32_t> out(wide.numel());
  const int64_t* p = wide.contiguous().data_ptr<int64_t>();
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint32_t>(p[i] & 0xFFFFFFFF);
  return out;
}

class Fp8CudaEncodeTable : public ::testing::TestWithParam<Fp8EncodeTable> {
 protected:
  void SetUp() override {
    if (const std::string why = no_cuda_reason(); !why.empty()) GTEST_SKIP() << why;
  }
};

TEST_P(Fp8CudaEncodeTable, EveryPatternMatchesFromItsOwnDtypeAndFromFloat32) {
  const Fp8EncodeTable& table = GetParam();
  const std::vector<uint8_t> want = read_fp8_encode_table(table);
  ASSERT_EQ(want.size(), 65536u) << "missing fixture fp8/" << table.file;
  const torch::Tensor src = all_16_bit_patterns(
      table.source == Fp8TableSource::kBF16 ? torch::kBFloat16 : torch::kFloat16);

  torch::Tensor codes = torch::empty({65536}, cuda_options(torch::kUInt8));
  ASSERT_THAT(fp8_encode(src, table.format, 1.0f, codes), IsOk());
  expect_codes(codes, want, table.file);

  // Every bf16 and fp16 value is exact in float32, so the table holds there too.
  const torch::Tensor src_f32 = src.to(torch::kFloat32);
  ASSERT_THAT(fp8_encode(src_f32, table.format, 1.0f, codes), IsOk());
  expect_codes(codes, want, "the same patterns as float32");
}

TEST_P(Fp8CudaEncodeTable, LargeTensorsMatchTheTableAtEveryPosition) {
  const Fp8EncodeTable& table = GetParam();
  const std::vector<uint8_t> want = read_fp8_encode_table(table);
  ASSERT_EQ(want.size(), 65536u) << "missing fixture fp8/" << table.file;
  const int64_t repeats = (kGridStrideElements + 65535) / 65536;
  const torch::Tensor src =
      all_16_bit_patterns(table.source == Fp8TableSource::kBF16 ? torch::kBFloat16
                                                                : torch::kFloat16)
          .repeat({repeats});
  torch::Tensor codes = torch::empty({src.numel()}, cuda_options(torch::kUInt8));
  ASSERT_THAT(fp8_encode(src, table.format, 1.0f, codes), IsOk());
  const torch::Tensor expected =
      torch::from_blob(const_cast<uint8_t*>(want.data()), {65536}, torch::kUInt8)
          .to(torch::kCUDA)
          .repeat({repeats});
  const int64_t mismatches = codes.ne(expected).sum().item<int64_t>();
  EXPECT_EQ(mismatches, 0) << table.file << " over " << src.numel() << " elements";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Fp8CudaEncodeTable, ::testing::ValuesIn(kFp8EncodeTables));

class Fp8CudaCodec : public ::testing::TestWithParam<Fp8Format> {
 protected:
  void SetUp() override {
    if (const std::string why = no_cuda_reason(); !why.empty()) GTEST_SKIP() << why;
  }
};

TEST_P(Fp8CudaCodec, DecodesEveryCodeBitForBitIntoEachDtype) {
  const Fp8Format format = GetParam();
  const std::vector<float> table = read_fp8_decode_table(format);
  ASSERT_EQ(table.size(), 256u) << "missing fixture fp8/" << fp8_decode_table_file(format);
  const torch::Tensor codes = torch::arange(256, cuda_options(torch::kInt32)).to(torch::kUInt8);
  const torch::Tensor table_f32 =
      torch::from_blob(const_cast<float*>(table.data()), {256}, torch::kFloat32);
  for (torch::ScalarType dtype : {torch::kFloat32, torch::kBFloat16, torch::kFloat16}) {
    torch::Tensor dst = torch::empty({256}, cuda_options(dtype));
    ASSERT_THAT(fp8_decode(codes, format, 1.0f, dst), IsOk());
    const torch::Tensor got = dst.to(torch::kCPU);
    // Every FP8 value is exact in each dtype, so the conversion is exact too.
    const std::vector<uint32_t> got_bits = bit_patterns(got);
    const std::vector<uint32_t> want_bits = bit_patterns(table_f32.to(dtype));
    const torch::Tensor got_f32 = got.to(torch::kFloat32);
    for (int code = 0; code < 256; ++code) {
      if (std::isnan(table[code])) {
        EXPECT_TRUE(std::isnan(got_f32[code].item<float>()))
            << c10::toString(dtype) << " code 0x" << std::hex << code;
      } else {
        EXPECT_EQ(got_bits[code], want_bits[code])
            << c10::toString(dtype) << " code 0x" << std::hex << code << ": bits 0x"
            << got_bits[code] << ", table 0x" << want_bits[code];
      }
    }
  }
}

TEST_P(Fp8CudaCodec, DecodesScaledCodesLikeTheReference) {
  const Fp8Format format = GetParam();
  const float scale = 0.09375f;
  const torch::Tensor codes = torch::arange(256, cuda_options(torch::kInt32)).to(torch::kUInt8);
  for (torch::ScalarType dtype : {torch::kFloat32, torch::kBFloat16, torch::kFloat16}) {
    torch::Tensor dst = torch::empty({256}, cuda_options(dtype));
    ASSERT_THAT(fp8_decode(codes, format, scale, dst), IsOk());
    const torch::Tensor got = dst.to(torch::kCPU).to(torch::kFloat32);
    for (int code = 0; code < 256; ++code) {
      const float product = fp8_decode_ref(static_cast<uint8_t>(code), format) * scale;
      const float want = dtype == torch::kFloat32    ? product
                         : dtype == torch::kBFloat16 ? float(c10::BFloat16(product))
                                                     : float(c10::Half(product));
      const float g = got[code].item<float>();
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(g)) << c10::toString(dtype) << " code " << code;
      } else {
        EXPECT_EQ(g, want) << c10::toString(dtype) << " code " << code;
      }
    }
  }
}

TEST_P(Fp8CudaCodec, DecodesLargeTensorsAlikeAtEveryPosition) {
  const Fp8Format format = GetParam();
  const int64_t repeats = (kGridStrideElements + 255) / 256;
  const torch::Tensor one = torch::arange(256, cuda_options(torch::kInt32)).to(torch::kUInt8);
  const torch::Tensor codes = one.repeat({repeats});
  for (torch::ScalarType dtype : {torch::kFloat32, torch::kBFloat16}) {
    torch::Tensor small = torch::empty({256}, cuda_options(dtype));
    ASSERT_THAT(fp8_decode(one, format, 1.0f, small), IsOk());
    torch::Tensor large = torch::empty({codes.numel()}, cuda_options(dtype));
    ASSERT_THAT(fp8_decode(codes, format, 1.0f, large), IsOk());
    // Compared as bits, so NaN codes count too.
    const torch::ScalarType bits = dtype == torch::kFloat32 ? torch::kInt32 : torch::kInt16;
    const int64_t mismatches =
        large.view(bits).ne(small.view(bits).repeat({repeats})).sum().item<int64_t>();
    EXPECT_EQ(mismatches, 0) << c10::toString(dtype) << " over " << codes.numel() << " codes";
  }
}

TEST_P(Fp8CudaCodec, EncodesRandomFloat32PatternsWithScaleLikeTheReference) {
  const Fp8Format format = GetParam();
  std::mt19937 rng(20240611);
  std::vector<uint32_t> bits(4 << 20);
  for (uint32_t& b : bits) b = static_cast<uint32_t>(rng());
  std::vector<float> values(bits.size());
  std::memcpy(values.data(), bits.data(), bits.size() * sizeof(float));
  const torch::Tensor src =
      torch::from_blob(values.data(), {static_cast<int64_t>(values.size())}, torch::kFloat32)
          .to(torch::kCUDA);
  for (float inv_scale : {1.0f, 1.0f / 0.0123f, 3.5f}) {
    torch::Tensor codes = torch::empty({src.numel()}, cuda_options(torch::kUInt8));
    ASSERT_THAT(fp8_encode(src, format, inv_scale, codes), IsOk());
    std::vector<uint8_t> want(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      want[i] = fp8_encode_ref(values[i] * inv_scale, format);
    }
    expect_codes(codes, want, "random float32 patterns");
  }
}

TEST_P(Fp8CudaCodec, EmptyTensorsAreNoOps) {
  torch::Tensor codes = torch::empty({0}, cuda_options(torch::kUInt8));
  torch::Tensor floats = torch::empty({0}, cuda_options(torch::kBFloat16));
  EXPECT_THAT(fp8_encode(floats, GetParam(), 1.0f, codes), IsOk());
  EXPECT_THAT(fp8_decode(codes, GetParam(), 1.0f, floats), IsOk());
}

// The CUDA quantiser equals the CPU one (fp8_cpu_test.cc checks that against
// the scalar reference) bit for bit, codes and scale, from each dtype: with a
// NaN and outliers, over more elements than the reduction's grid, and for
// zeros and an empty tensor (the least scale).
TEST_P(Fp8CudaCodec, QuantisesPerTensorLikeTheCpu) {
  const Fp8Format format = GetParam();
  constexpr float kMinScale = 1e-12f;
  torch::manual_seed(5);
  for (const int64_t n : {int64_t{1}, int64_t{4099}, kGridStrideElements}) {
    torch::Tensor values = torch::randn({n}) * 3.0;
    values[0] = -7000.0;
    if (n > 2) values[n / 2] = NAN;
    for (torch::ScalarType dtype : {torch::kFloat32, torch::kBFloat16, torch::kFloat16}) {
      const torch::Tensor host = values.to(dtype);
      torch::Tensor want_codes = torch::empty({n}, torch::kUInt8);
      torch::Tensor want_scale = torch::empty({}, torch::kFloat32);
      ASSERT_THAT(fp8_quantize(host, format, kMinScale, want_codes, want_scale), IsOk());
      const torch::Tensor src = host.to(torch::kCUDA);
      torch::Tensor codes = torch::empty({n}, cuda_options(torch::kUInt8));
      torch::Tensor scale = torch::empty({}, cuda_options(torch::kFloat32));
      ASSERT_THAT(fp8_quantize(src, format, kMinScale, codes, scale), IsOk());
      EXPECT_EQ(scale.item<float>(), want_scale.item<float>()) << c10::toString(dtype) << ", " << n << " values";
      const int64_t mismatches = codes.to(torch::kCPU).ne(want_codes).sum().item<int64_t>();
      EXPECT_EQ(mismatches, 0) << c10::toString(dtype) << ", " << n << " values";
    }
  }
  for (const int64_t n : {int64_t{0}, int64_t{300}}) {
    const torch::Tensor zeros = torch::zeros({n}, cuda_options(torch::kBFloat16));
    torch::Tensor codes = torch::full({n}, 0xAB, cuda_options(torch::kUInt8));
    torch::Tensor scale = torch::full({}, 5.0f, cuda_options(torch::kFloat32));
    ASSERT_THAT(fp8_quantize(zeros, format, kMinScale, codes, scale), IsOk());
    EXPECT_EQ(scale.item<float>(), kMinScale) << n << " zeros";
    EXPECT_EQ(codes.ne(0).sum().item<int64_t>(), 0) << n << " zeros";
  }
}

// The dispatch's checks, which hold on any device.
TEST(Fp8Codec, QuantiseRefusesABadScaleTensorOrLeastScale) {
  const torch::Tensor src = torch::ones({8}, torch::kBFloat16);
  torch::Tensor codes = torch::empty({8}, torch::kUInt8);
  torch::Tensor scale = torch::empty({}, torch::kFloat32);
  EXPECT_EQ(fp8_quantize(src, Fp8Format::kE4M3Fn, 0.0f, codes, scale).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(fp8_quantize(src, Fp8Format::kE4M3Fn, NAN, codes, scale).code(), absl::StatusCode::kInvalidArgument);
  torch::Tensor two = torch::empty({2}, torch::kFloat32);
  EXPECT_EQ(fp8_quantize(src, Fp8Format::kE4M3Fn, 1e-12f, codes, two).code(), absl::StatusCode::kInvalidArgument);
  torch::Tensor wide = torch::empty({}, torch::kFloat64);
  EXPECT_EQ(fp8_quantize(src, Fp8Format::kE4M3Fn, 1e-12f, codes, wide).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_THAT(fp8_quantize(src, Fp8Format::kE4M3Fn, 1e-12f, codes, scale), IsOk());
  EXPECT_EQ(scale.item<float>(), 1.0f / 448.0f);
  EXPECT_EQ(codes.eq(0x7E).sum().item<int64_t>(), 8) << "1 / (1/448) is 448, e4m3fn's largest: code 0x7E";
}

INSTANTIATE_TEST_SUITE_P(Formats, Fp8CudaCodec,
                         ::testing::Values(Fp8Format::kE4M3Fn, Fp8Format::kE5M2),
                         [](const auto& info) { return fp8_format_name(info.param); });

}  // namespace
}  // namespace diffusiond
