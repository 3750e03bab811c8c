// The name tables next to ComputeDtype and Fp8Format: every enumerator has
// one name, names round-trip, aliases parse, and nothing else does.
#include "core/precision/compute_dtype.h"
#include "gtest/gtest.h"
#include "kernels/fp8_format.h"

namespace diffusiond {
namespace {

TEST(ComputeDtypeNames, EveryDtypeRoundTripsThroughItsName) {
  for (int i = 0; i < kNumComputeDtypes; ++i) {
    const auto dtype = static_cast<ComputeDtype>(i);
    EXPECT_EQ(parse_compute_dtype_name(compute_dtype_name(dtype)), dtype);
  }
  EXPECT_EQ(compute_dtype_choices(), "float32, bfloat16, float16");
}

TEST(ComputeDtypeNames, AliasesAndCaseParse) {
  EXPECT_EQ(parse_compute_dtype_name("BF16"), ComputeDtype::kBFloat16);
  EXPECT_EQ(parse_compute_dtype_name("fp32"), ComputeDtype::kFloat32);
  EXPECT_EQ(parse_compute_dtype_name("f16"), ComputeDtype::kFloat16);
  for (const char* bad : {"", "float64", "bfloat", "fp8"}) {
    EXPECT_FALSE(parse_compute_dtype_name(bad).has_value()) << bad;
  }
}

TEST(Fp8FormatNames, EveryFormatRoundTripsThroughItsName) {
  for (int i = 0; i < kNumFp8Formats; ++i) {
    const auto format = static_cast<Fp8Format>(i);
    Fp8Format parsed;
    ASSERT_TRUE(parse_fp8_format(fp8_format_name(format), &parsed));
    EXPECT_EQ(parsed, format);
  }
  Fp8Format unused;
  EXPECT_FALSE(parse_fp8_format("E4M3FN", &unused));  // flags spell them exactly
  EXPECT_FALSE(parse_fp8_format("off", &unused));
}

}  // namespace
}  // namespace diffusiond
