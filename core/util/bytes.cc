#include "core/util/bytes.h"

#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
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

absl::StatusOr<int64_t> parse_bytes(absl::string_view text) {
  struct Unit {
    absl::string_view suffix;
    double multiplier;
  };
  // Longest suffixes first so "GiB" is not read as "B".
  static constexpr Unit kUnits[] = {
      {"kib", 1024.0}, {"mib", 1048576.0}, {"gib", 1073741824.0}, {"tib", 1099511627776.0},
      {"kb", 1e3},     {"mb", 1e6},        {"gb", 1e9},           {"tb", 1e12},
      {"b", 1.0},
  };
  const std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  absl::string_view number = lower;
  double multiplier = 1.0;
  bool has_unit = false;
  for (const Unit& u : kUnits) {
    if (absl::EndsWith(number, u.suffix)) {
      number.remove_suffix(u.suffix.size());
      multiplier = u.multiplier;
      has_unit = true;
      break;
    }
  }
  number = absl::StripAsciiWhitespace(number);
  const auto invalid = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "size '", text, "' is not a byte count such as 1073741824, 800MB or 12GiB"));
  };
  int64_t whole = 0;
  if (absl::SimpleAtoi(number, &whole)) {
    if (whole < 0) return invalid();
    const double bytes = static_cast<double>(whole) * multiplier;
    if (bytes >= 9.2e18) return invalid();
    return multiplier == 1.0 ? whole : static_cast<int64_t>(bytes);
  }
  double value = 0;
  if (!has_unit || multiplier == 1.0 || !absl::SimpleAtod(number, &value) || !(value >= 0) ||
      value * multiplier >= 9.2e18) {
    return invalid();
  }
  return static_cast<int64_t>(value * multiplier);
}

}  // namespace diffusiond
