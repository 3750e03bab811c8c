// Module-name templates of the LoRA key rules: literal text with
// placeholders `{i}` (a block index: one or more digits) and `{p}` (a patch
// key such as Z-Image's "2-1": digits and '-'). A template matches a name
// whole; what the placeholders matched fills another template in order.
#ifndef DIFFUSIOND_CORE_LORA_INTERNAL_NAME_PATTERN_H_
#define DIFFUSIOND_CORE_LORA_INTERNAL_NAME_PATTERN_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace diffusiond::lora_internal {

// The texts `pattern`'s placeholders matched when it matches all of
// `name`, else nothing. With `flattened`, every '.' of the pattern's
// literal text matches '_' instead (kohya's flattened names).
std::optional<std::vector<std::string>> match_name(absl::string_view pattern, absl::string_view name, bool flattened);

// `pattern` with its placeholders replaced by `values` in order.
// REQUIRES: `values` has one entry per placeholder.
std::string fill_name(absl::string_view pattern, const std::vector<std::string>& values);

}  // namespace diffusiond::lora_internal

#endif  // DIFFUSIOND_CORE_LORA_INTERNAL_NAME_PATTERN_H_
