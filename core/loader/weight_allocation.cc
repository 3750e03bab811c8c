#include "core/loader/weight_allocation.h"

#include "absl/strings/str_cat.h"
#include "core/util/bytes.h"

namespace diffusiond {

absl::StatusOr<torch::Tensor> allocate_weight(const std::vector<int64_t>& shape, torch::ScalarType dtype,
                                              Residency residency) {
  int64_t nbytes = static_cast<int64_t>(c10::elementSize(dtype));
  for (int64_t d : shape) nbytes *= d;
  const auto options = torch::TensorOptions().dtype(dtype);
  if (nbytes < kMappedWeightMinBytes) return torch::empty(shape, options);
  auto mapping = map_anonymous(nbytes, residency);
  if (!mapping.ok()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot map ", format_bytes(nbytes), " for a weight: ", mapping.status().message()));
  }
  return torch::from_blob(
      mapping->base, shape, [m = *mapping](void*) { unmap_anonymous(m); }, options);
}

}  // namespace diffusiond
