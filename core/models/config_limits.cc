#include "core/models/config_limits.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace diffusiond {

absl::Status check_int_fields(absl::string_view architecture, std::initializer_list<IntField> fields) {
  for (const IntField& f : fields) {
    if (f.value >= f.min && f.value <= f.max) continue;
    std::string expected;
    if (f.value > f.max) {
      expected = absl::StrCat("at most ", f.max);
    } else if (f.min == 1) {
      expected = "a positive integer";
    } else if (f.min == 0) {
      expected = "a non-negative integer";
    } else {
      expected = absl::StrCat("at least ", f.min);
    }
    return absl::InvalidArgumentError(
        absl::StrCat(architecture, " config: ", f.name, " is ", f.value, ", expected ", expected));
  }
  return absl::OkStatus();
}

absl::Status check_positive_real(absl::string_view architecture, const char* name, double value,
                                 bool allow_zero) {
  const bool low_ok = allow_zero ? value >= 0 : value > 0;
  if (!std::isfinite(value) || !low_ok || value > kMaxConfigReal) {
    return absl::InvalidArgumentError(absl::StrCat(architecture, " config: ", name, " is ", value,
                                                   ", expected a finite number in ", allow_zero ? "[0" : "(0",
                                                   ", ", kMaxConfigReal, "]"));
  }
  return absl::OkStatus();
}

int64_t count_indexed_blocks(const std::vector<std::string>& names, absl::string_view prefix) {
  int64_t count = 0;
  for (const std::string& name : names) {
    absl::string_view rest = name;
    if (!absl::ConsumePrefix(&rest, prefix)) continue;
    int64_t index = 0;
    if (absl::SimpleAtoi(rest.substr(0, rest.find('.')), &index) && index >= 0 && index < INT64_MAX) {
      count = std::max(count, index + 1);
    }
  }
  return count;
}

std::vector<std::string> canonical_tensor_names(
    const Checkpoint& checkpoint,
    const std::function<std::optional<std::string>(absl::string_view)>& canonical) {
  std::vector<std::string> names;
  names.reserve(checkpoint.tensors().size());
  for (const TensorRecord& t : checkpoint.tensors()) {
    if (std::optional<std::string> name = canonical(t.name)) names.push_back(std::move(*name));
  }
  return names;
}

absl::Status check_declared_count(absl::string_view config_path, const char* field, int64_t declared,
                                  absl::string_view checkpoint_path, const std::vector<std::string>& names,
                                  absl::string_view prefix) {
  const int64_t held = count_indexed_blocks(names, prefix);
  if (held == declared) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      config_path, ": ", field, " is ", declared, ", but ", checkpoint_path, " holds ", held,
      " block(s) '", prefix, "N.'; the config and the weights disagree"));
}

}  // namespace diffusiond
