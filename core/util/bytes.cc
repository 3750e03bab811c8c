#include "core/util/bytes.h"

#include <cstdlib>

#include "absl/strings/str_format.h"

namespace diffusiond {

std::string format_bytes(int64_t bytes) {
  const double magnitude = static_cast<double>(std::llabs(bytes));
  const char* const sign = bytes < 0 ? "-" : "";
  if (magnitude < kKiB) return absl::StrFormat("%d bytes", bytes);
  const char* unit = "KiB";
  double scaled = magnitude / kKiB;
  if (magnitude >= kGiB) {
    unit = "GiB";
    scaled = magnitude / kGiB;
  } else if (magnitude >= kMiB) {
    unit = "MiB";
    scaled = magnitude / kMiB;
  }
  return absl::StrFormat("%s%.2f %s (%d bytes)", sign, scaled, unit, bytes);
}

}  // namespace diffusiond
