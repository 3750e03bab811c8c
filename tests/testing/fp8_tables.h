// The exact-arithmetic FP8 tables of the shared fixtures (fixtures/fp8, see
// its README), read for the tests of every codec variant: the scalar
// reference, the CPU and the CUDA kernels.
//
// Not here: any codec; these helpers only read and describe the tables.
#ifndef DIFFUSIOND_TESTS_TESTING_FP8_TABLES_H_
#define DIFFUSIOND_TESTS_TESTING_FP8_TABLES_H_

#include <c10/util/Half.h>

#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "kernels/fp8_format.h"
#include "tests/testing/fixtures.h"

namespace diffusiond::testing {

// The value of the bfloat16 whose bit pattern is `bits`.
inline float bf16_bits_value(uint16_t bits) {
  const uint32_t wide = uint32_t{bits} << 16;
  float f;
  std::memcpy(&f, &wide, sizeof(f));
  return f;
}

// The value of the IEEE float16 whose bit pattern is `bits`.
inline float fp16_bits_value(uint16_t bits) { return c10::detail::fp16_ieee_to_fp32_value(bits); }

// The 16-bit source type of an encode table.
enum class Fp8TableSource { kBF16, kF16 };

// One encode table: entry i is the code of the 16-bit float whose bit
// pattern is i.
struct Fp8EncodeTable {
  const char* file;  // under fixtures/fp8/
  Fp8Format format;
  Fp8TableSource source;

  // The value of source bit pattern `bits`.
  float value(uint16_t bits) const {
    return source == Fp8TableSource::kBF16 ? bf16_bits_value(bits) : fp16_bits_value(bits);
  }
};

inline void PrintTo(const Fp8EncodeTable& t, std::ostream* os) { *os << t.file; }

// Every encode table of the fixture.
inline constexpr Fp8EncodeTable kFp8EncodeTables[] = {
    {"bf16_to_e4m3fn.u8", Fp8Format::kE4M3Fn, Fp8TableSource::kBF16},
    {"bf16_to_e5m2.u8", Fp8Format::kE5M2, Fp8TableSource::kBF16},
    {"fp16_to_e4m3fn.u8", Fp8Format::kE4M3Fn, Fp8TableSource::kF16},
    {"fp16_to_e5m2.u8", Fp8Format::kE5M2, Fp8TableSource::kF16},
};

// Returns the 65536 codes of `table`, or an empty vector when the fixture
// is missing or has another size (callers then fail naming the file).
inline std::vector<uint8_t> read_fp8_encode_table(const Fp8EncodeTable& table) {
  const std::vector<char> raw = read_fixture(std::string("fp8/") + table.file);
  if (raw.size() != 65536) return {};
  return std::vector<uint8_t>(raw.begin(), raw.end());
}

// The file of `format`'s decode table, under fixtures/fp8/.
inline const char* fp8_decode_table_file(Fp8Format format) {
  return format == Fp8Format::kE4M3Fn ? "e4m3fn_decode.f32" : "e5m2_decode.f32";
}

// Returns the value of each of `format`'s 256 codes (NaN codes are NaN), or
// an empty vector when the fixture is missing or has another size.
inline std::vector<float> read_fp8_decode_table(Fp8Format format) {
  const std::vector<char> raw = read_fixture(std::string("fp8/") + fp8_decode_table_file(format));
  if (raw.size() != 256 * sizeof(float)) return {};
  std::vector<float> values(256);
  std::memcpy(values.data(), raw.data(), raw.size());
  return values;
}

}  // namespace diffusiond::testing

#endif  // DIFFUSIOND_TESTS_TESTING_FP8_TABLES_H_
