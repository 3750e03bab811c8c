#include "core/pipeline/unported_architectures.h"

#include <array>

namespace diffusiond {

bool is_unported_architecture(absl::string_view architecture) {
  // Empty since the Qwen-Image/Wan VAEs and the Qwen VL towers were ported.
  constexpr std::array<absl::string_view, 0> kUnported{};
  for (absl::string_view unported : kUnported) {
    if (architecture == unported) return true;
  }
  return false;
}

}  // namespace diffusiond
