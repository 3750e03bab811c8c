// Byte counts as people read them, for error messages, logs and CLIs.
//
#ifndef DIFFUSIOND_CORE_UTIL_BYTES_H_
#define DIFFUSIOND_CORE_UTIL_BYTES_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

inline constexpr int64_t kKiB = int64_t{1} << 10;
inline constexpr int64_t kMiB = int64_t{1} << 20;
inline constexpr int64_t kGiB = int64_t{1} << 30;

// Returns `bytes` in binary units with the exact count, e.g.
// "1.50 GiB (1610612736 bytes)". Negative counts are printed with a sign.
std::string format_bytes(int64_t bytes);

// Parses a size: a non-negative integer with an optional unit, binary
// (KiB, MiB, GiB, TiB) or decimal (kB/KB, MB, GB, TB), or "B"; no unit means
// bytes. Fractions are allowed with a unit ("1.5GiB"). Returns
// INVALID_ARGUMENT naming the text for anything else or for overflow.
absl::StatusOr<int64_t> parse_bytes(absl::string_view text);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_UTIL_BYTES_H_
