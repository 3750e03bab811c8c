#include <cfenv>
#include <cmath>
#include <limits>

#include "kernels/fp8_format.h"

namespace diffusiond {

uint8_t fp8_encode_ref(float value, Fp8Format format) {
  const Fp8Params& p = fp8_params(format);
  if (std::isnan(value)) return 0x7F;
  const uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
  const double magnitude = std::fabs(static_cast<double>(value));
  if (magnitude == 0.0) return sign;
  if (std::isinf(magnitude)) return sign | p.max_code;

  // magnitude = 2^e * (n / 2^m) with n in [2^m, 2^(m+1)) for normals; below
  // the normal range the exponent is pinned and n is a subnormal mantissa.
  int exponent = 0;
  std::frexp(magnitude, &exponent);
  const int min_exponent = 1 - p.exponent_bias;
  const int e = std::max(exponent - 1, min_exponent);
  const double quantum = std::ldexp(1.0, e - p.mantissa_bits);
  // std::nearbyint rounds half to even in the default rounding mode; the
  // division by a power of two is exact in double.
  const auto n = static_cast<int64_t>(std::nearbyint(magnitude / quantum));
  // One formula covers normals, subnormals, and a carry into the next binade.
  const int64_t code = (static_cast<int64_t>(e + p.exponent_bias - 1) << p.mantissa_bits) + n;
  return sign | static_cast<uint8_t>(code > p.max_code ? p.max_code : code);
}

float fp8_decode_ref(uint8_t code, Fp8Format format) {
  const Fp8Params& p = fp8_params(format);
  const bool negative = (code & 0x80) != 0;
  const int exponent_field = (code & 0x7F) >> p.mantissa_bits;
  const int mantissa = code & ((1 << p.mantissa_bits) - 1);
  const int max_exponent_field = (1 << (7 - p.mantissa_bits)) - 1;
  float magnitude;
  if (format == Fp8Format::kE4M3Fn && exponent_field == max_exponent_field &&
      mantissa == (1 << p.mantissa_bits) - 1) {
    return std::numeric_limits<float>::quiet_NaN();
  } else if (format == Fp8Format::kE5M2 && exponent_field == max_exponent_field) {
    if (mantissa != 0) return std::numeric_limits<float>::quiet_NaN();
    magnitude = std::numeric_limits<float>::infinity();
  } else if (exponent_field == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa),
                           1 - p.exponent_bias - p.mantissa_bits);
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa + (1 << p.mantissa_bits)),
                           exponent_field - p.exponent_bias - p.mantissa_bits);
  }
  return negative ? -magnitude : magnitude;
}

}  // namespace diffusiond
