#include "core/loader/weight_allocation.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "core/memory/recycled_pages.h"
#include "core/util/bytes.h"

namespace diffusiond {

absl::StatusOr<torch::Tensor> allocate_weight(const std::vector<int64_t>& shape, torch::ScalarType dtype,
                                              Residency residency) {
  int64_t nbytes = static_cast<int64_t>(c10::elementSize(dtype));
  for (int64_t d : shape) nbytes *= d;
  const auto options = torch::TensorOptions().dtype(dtype);
  if (nbytes < kMappedWeightMinBytes) return torch::empty(shape, options);
  AnonymousMapping mapping;
  RecycledPages* const recycled = RecycledPages::current();
  if (std::optional<AnonymousMapping> reused = recycled != nullptr ? recycled->take(nbytes) : std::nullopt) {
    mapping = *reused;
  } else {
    // These pages are new, so the recycled ones they replace must go: the
    // two together stay within what the load has charged.
    if (recycled != nullptr) recycled->limit_to(recycled->bytes() - round_up_to_pages(nbytes));
    absl::StatusOr<AnonymousMapping> fresh = map_anonymous(nbytes, residency);
    if (!fresh.ok()) {
      return absl::ResourceExhaustedError(
          absl::StrCat("cannot map ", format_bytes(nbytes), " for a weight: ", fresh.status().message()));
    }
    mapping = *fresh;
  }
  return torch::from_blob(
      mapping.base, shape, [mapping](void*) { release_weight_mapping(mapping); }, options);
}

}  // namespace diffusiond
