// The scalar reference codec against the independent exact-arithmetic
// tables in the shared fixtures: every bf16 and fp16 bit pattern, both
// formats, and all 256 codes of each decoder.
#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/fp8_format.h"
#include "tests/testing/fp8_tables.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::Fp8EncodeTable;
using ::diffusiond::testing::fp8_decode_table_file;
using ::diffusiond::testing::kFp8EncodeTables;
using ::diffusiond::testing::read_fp8_decode_table;
using ::diffusiond::testing::read_fp8_encode_table;

class EncodeTable : public ::testing::TestWithParam<Fp8EncodeTable> {};

TEST_P(EncodeTable, EveryBitPatternMatchesTheOracle) {
  const Fp8EncodeTable& table = GetParam();
  const std::vector<uint8_t> expected = read_fp8_encode_table(table);
  ASSERT_EQ(expected.size(), 65536u) << "missing fixture fp8/" << table.file;
  int mismatches = 0;
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    const uint8_t want = expected[bits];
    const uint8_t got = fp8_encode_ref(table.value(static_cast<uint16_t>(bits)), table.format);
    if (got != want && ++mismatches <= 5) {
      ADD_FAILURE() << table.file << ": pattern 0x" << std::hex << bits << " encodes to 0x"
                    << int{got} << ", oracle says 0x" << int{want};
    }
  }
  EXPECT_EQ(mismatches, 0);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, EncodeTable, ::testing::ValuesIn(kFp8EncodeTables));

void expect_decode_table(Fp8Format format) {
  const char* file = fp8_decode_table_file(format);
  const std::vector<float> table = read_fp8_decode_table(format);
  ASSERT_EQ(table.size(), 256u) << "missing fixture fp8/" << file;
  for (int code = 0; code < 256; ++code) {
    const float want = table[code];
    const float got = fp8_decode_ref(static_cast<uint8_t>(code), format);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << file << " code " << code;
    } else {
      EXPECT_EQ(got, want) << file << " code " << code;
      EXPECT_EQ(std::signbit(got), std::signbit(want)) << file << " code " << code;
    }
  }
}

TEST(DecodeTable, E4M3FnAll256Codes) { expect_decode_table(Fp8Format::kE4M3Fn); }
TEST(DecodeTable, E5M2All256Codes) { expect_decode_table(Fp8Format::kE5M2); }

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
