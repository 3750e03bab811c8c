#include "core/models/common/canonical_shapes.h"

namespace diffusiond {

int count_canonical_tensors(const Checkpoint& checkpoint, const CanonicalNameFn& canonical,
                            std::initializer_list<absl::string_view> wanted) {
  int found = 0;
  for (const TensorRecord& t : checkpoint.tensors()) {
    const std::optional<std::string> name = canonical(t.name);
    if (!name.has_value()) continue;
    for (absl::string_view w : wanted) {
      if (*name == w) {
        ++found;
        break;
      }
    }
  }
  return found;
}

CanonicalShapes::CanonicalShapes(const Checkpoint& checkpoint, const CanonicalNameFn& canonical) {
  for (const TensorRecord& t : checkpoint.tensors()) {
    if (std::optional<std::string> name = canonical(t.name)) {
      shapes_[*name] = t.shape;
      names_.push_back(*name);
    }
  }
}

std::optional<std::vector<int64_t>> CanonicalShapes::shape_of(absl::string_view name) const {
  const auto it = shapes_.find(name);
  if (it == shapes_.end()) return std::nullopt;
  return it->second;
}

std::function<std::optional<std::vector<int64_t>>(absl::string_view)> CanonicalShapes::lookup() const {
  return [this](absl::string_view name) { return shape_of(name); };
}

}  // namespace diffusiond
