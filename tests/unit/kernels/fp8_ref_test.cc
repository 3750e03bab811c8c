// The scalar reference codec against the independent exact-arithmetic
// tables in the shared fixtures: every bf16 and fp16 bit pattern, both
// formats, and all 256 codes of each decoder.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <c10/util/Half.h>

#include "gtest/gtest.h"
#include "kernels/fp8_format.h"
#include "tests/testing/fixtures.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::read_fixture;

float bf16_value(uint16_t bits) {
  const uint32_t wide = uint32_t{bits} << 16;
  float f;
  std::memcpy(&f, &wide, sizeof(f));
  return f;
}

float fp16_value(uint16_t bits) { return c10::detail::fp16_ieee_to_fp32_value(bits); }

struct TableCase {
  const char* file;
  Fp8Format format;
  float (*source)(uint16_t);
};

void PrintTo(const TableCase& c, std::ostream* os) { *os << c.file; }

class EncodeTable : public ::testing::TestWithParam<TableCase> {};

TEST_P(EncodeTable, EveryBitPatternMatchesTheOracle) {
  const TableCase& c = GetParam();
  const std::vector<char> expected = read_fixture(std::string("fp8/") + c.file);
  ASSERT_EQ(expected.size(), 65536u) << "missing fixture fp8/" << c.file;
  int mismatches = 0;
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    const uint8_t want = static_cast<uint8_t>(expected[bits]);
    const uint8_t got = fp8_encode_ref(c.source(static_cast<uint16_t>(bits)), c.format);
    if (got != want && ++mismatches <= 5) {
      ADD_FAILURE() << c.file << ": pattern 0x" << std::hex << bits << " encodes to 0x"
                    << int{got} << ", oracle says 0x" << int{want};
    }
  }
  EXPECT_EQ(mismatches, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, EncodeTable,
    ::testing::Values(TableCase{"bf16_to_e4m3fn.u8", Fp8Format::kE4M3Fn, &bf16_value},
                      TableCase{"bf16_to_e5m2.u8", Fp8Format::kE5M2, &bf16_value},
                      TableCase{"fp16_to_e4m3fn.u8", Fp8Format::kE4M3Fn, &fp16_value},
                      TableCase{"fp16_to_e5m2.u8", Fp8Format::kE5M2, &fp16_value}));

void expect_decode_table(const char* file, Fp8Format format) {
  const std::vector<char> raw = read_fixture(std::string("fp8/") + file);
  ASSERT_EQ(raw.size(), 1024u) << "missing fixture fp8/" << file;
  for (int code = 0; code < 256; ++code) {
    float want;
    std::memcpy(&want, raw.data() + 4 * code, sizeof(want));
    const float got = fp8_decode_ref(static_cast<uint8_t>(code), format);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << file << " code " << code;
    } else {
      EXPECT_EQ(got, want) << file << " code " << code;
      EXPECT_EQ(std::signbit(got), std::signbit(want)) << file << " code " << code;
    }
  }
}

TEST(DecodeTable, E4M3FnAll256Codes) { expect_decode_table("e4m3fn_decode.f32", Fp8Format::kE4M3Fn); }
TEST(DecodeTable, E5M2All256Codes) { expect_decode_table("e5m2_decode.f32", Fp8Format::kE5M2); }

TEST(EncodeRef, SpotValuesFromTheFixtureReadme) {
  const Fp8Format f = Fp8Format::kE4M3Fn;
  EXPECT_EQ(fp8_encode_ref(1.0f, f), 0x38);
  EXPECT_EQ(fp8_encode_ref(448.0f, f), 0x7E);
  EXPECT_EQ(fp8_encode_ref(464.0f, f), 0x7E);
  EXPECT_EQ(fp8_encode_ref(1e9f, f), 0x7E);
  EXPECT_EQ(fp8_encode_ref(INFINITY, f), 0x7E);
  EXPECT_EQ(fp8_encode_ref(-INFINITY, f), 0xFE);
  EXPECT_EQ(fp8_encode_ref(std::ldexp(1.0f, -9), f), 0x01);
  EXPECT_EQ(fp8_encode_ref(std::ldexp(1.0f, -10), f), 0x00);
  EXPECT_EQ(fp8_encode_ref(1.0625f, f), 0x38);
  EXPECT_EQ(fp8_encode_ref(-0.0f, f), 0x80);
  EXPECT_EQ(fp8_encode_ref(-NAN, f), 0x7F);
}

TEST(RoundTrip, EveryFiniteCodeDecodesAndEncodesToItself) {
  for (Fp8Format f : {Fp8Format::kE4M3Fn, Fp8Format::kE5M2}) {
    for (int code = 0; code < 256; ++code) {
      const float v = fp8_decode_ref(static_cast<uint8_t>(code), f);
      if (!std::isfinite(v)) continue;
      EXPECT_EQ(fp8_encode_ref(v, f), code) << "format " << int(f) << " code " << code;
    }
  }
}

}  // namespace
}  // namespace diffusiond
