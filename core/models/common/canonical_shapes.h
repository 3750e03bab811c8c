// A checkpoint's tensors read by canonical name, as the families recognise
// original-naming single files and infer their configs from shapes.
//
// Not here: the name maps themselves (each model's *_params.h) and the
// declared-count checks (core/models/config_limits.h).
#ifndef DIFFUSIOND_CORE_MODELS_COMMON_CANONICAL_SHAPES_H_
#define DIFFUSIOND_CORE_MODELS_COMMON_CANONICAL_SHAPES_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/checkpoint/checkpoint.h"

namespace diffusiond {

// Maps a checkpoint's tensor name to its canonical one; nullopt drops it.
using CanonicalNameFn = std::function<std::optional<std::string>(absl::string_view)>;

// Returns how many of `checkpoint`'s tensors map by `canonical` to one of
// `wanted`.
int count_canonical_tensors(const Checkpoint& checkpoint, const CanonicalNameFn& canonical,
                            std::initializer_list<absl::string_view> wanted);

// The shapes of a checkpoint's tensors under their canonical names, read
// once. Immutable after construction; thread-compatible.
class CanonicalShapes {
 public:
  CanonicalShapes(const Checkpoint& checkpoint, const CanonicalNameFn& canonical);

  // The canonical names in checkpoint order (repeats kept).
  const std::vector<std::string>& names() const { return names_; }
  // Returns the shape of canonical `name` (the last tensor's, for a
  // repeat), or nullopt when none maps to it.
  std::optional<std::vector<int64_t>> shape_of(absl::string_view name) const;
  // Returns shape_of as the callable the infer_*_config functions take.
  // REQUIRES: *this outlives it.
  std::function<std::optional<std::vector<int64_t>>(absl::string_view)> lookup() const;

 private:
  std::map<std::string, std::vector<int64_t>, std::less<>> shapes_;
  std::vector<std::string> names_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_COMMON_CANONICAL_SHAPES_H_
