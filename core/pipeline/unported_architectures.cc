#include "core/pipeline/unported_architectures.h"

namespace diffusiond {

bool is_unported_architecture(absl::string_view architecture) {
  for (absl::string_view unported : {kQwenImageVaeArchitecture, kWanVaeArchitecture}) {
    if (architecture == unported) return true;
  }
  return false;
}

}  // namespace diffusiond
