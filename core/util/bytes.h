// Byte counts as people read them, for error messages, logs and CLIs.
//
// Not here: parsing sizes from flags (server/ owns flag syntax).
#ifndef DIFFUSIOND_CORE_UTIL_BYTES_H_
#define DIFFUSIOND_CORE_UTIL_BYTES_H_

#include <cstdint>
#include <string>

namespace diffusiond {

inline constexpr int64_t kKiB = int64_t{1} << 10;
inline constexpr int64_t kMiB = int64_t{1} << 20;
inline constexpr int64_t kGiB = int64_t{1} << 30;

// Returns `bytes` in binary units with the exact count, e.g.
// "1.50 GiB (1610612736 bytes)". Negative counts are printed with a sign.
std::string format_bytes(int64_t bytes);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_UTIL_BYTES_H_
