#include "core/models/model_family.h"

#include "core/models/flux/flux_family.h"
#include "core/models/z_image/z_image_family.h"

namespace diffusiond {

const std::vector<const ModelFamily*>& model_families() {
  // Leaked on purpose: statics stay trivially destructible.
  static const auto* const families = new std::vector<const ModelFamily*>{z_image_family(), flux_family()};
  return *families;
}

const ModelFamily* find_model_family(const Checkpoint& checkpoint) {
  for (const ModelFamily* family : model_families()) {
    if (family->recognizes(checkpoint)) return family;
  }
  return nullptr;
}

}  // namespace diffusiond
