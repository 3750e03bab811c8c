#include "core/lora/internal/name_pattern.h"

#include <cassert>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace diffusiond::lora_internal {
namespace {

constexpr absl::string_view kIndex = "{i}";
constexpr absl::string_view kPatch = "{p}";

bool placeholder_at(absl::string_view pattern, size_t at, bool* patch) {
  const absl::string_view rest = pattern.substr(at);
  if (absl::StartsWith(rest, kIndex)) return *patch = false, true;
  if (absl::StartsWith(rest, kPatch)) return *patch = true, true;
  return false;
}

}  // namespace

std::optional<std::vector<std::string>> match_name(absl::string_view pattern, absl::string_view name, bool flattened) {
  std::vector<std::string> values;
  size_t p = 0, n = 0;
  while (p < pattern.size()) {
    bool patch = false;
    if (placeholder_at(pattern, p, &patch)) {
      // Greedy is exact here: a placeholder is never followed by a digit
      // (or, for {p}, a '-') in any template.
      const size_t begin = n;
      while (n < name.size() && (absl::ascii_isdigit(name[n]) || (patch && name[n] == '-'))) ++n;
      if (n == begin) return std::nullopt;
      values.emplace_back(name.substr(begin, n - begin));
      p += kIndex.size();
      continue;
    }
    const char want = flattened && pattern[p] == '.' ? '_' : pattern[p];
    if (n >= name.size() || name[n] != want) return std::nullopt;
    ++p, ++n;
  }
  if (n != name.size()) return std::nullopt;
  return values;
}

std::string fill_name(absl::string_view pattern, const std::vector<std::string>& values) {
  std::string out;
  size_t next = 0;
  for (size_t p = 0; p < pattern.size();) {
    bool patch = false;
    if (placeholder_at(pattern, p, &patch)) {
      assert(next < values.size() && "template has more placeholders than values");
      out += values[next++];
      p += kIndex.size();
    } else {
      out += pattern[p++];
    }
  }
  return out;
}

}  // namespace diffusiond::lora_internal
