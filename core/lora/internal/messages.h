// How LoRA errors list what is wrong: at most kMaxListedProblems items (a
// file with thousands of bad keys still answers with a short message), and
// shapes written "[4, 64]".
#ifndef DIFFUSIOND_CORE_LORA_INTERNAL_MESSAGES_H_
#define DIFFUSIOND_CORE_LORA_INTERNAL_MESSAGES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace diffusiond::lora_internal {

inline constexpr size_t kMaxListedProblems = 8;

inline std::string shape_text(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

}  // namespace diffusiond::lora_internal

#endif  // DIFFUSIOND_CORE_LORA_INTERNAL_MESSAGES_H_
