#include "core/loader/weight_allocation.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/util/bytes.h"

namespace diffusiond {

absl::StatusOr<torch::Tensor> allocate_weight(const std::vector<int64_t>& shape,
                                              torch::ScalarType dtype) {
  int64_t nbytes = static_cast<int64_t>(c10::elementSize(dtype));
  for (int64_t d : shape) nbytes *= d;
  const auto options = torch::TensorOptions().dtype(dtype);
  if (nbytes < kMappedWeightMinBytes) return torch::empty(shape, options);
  void* p = ::mmap(nullptr, static_cast<size_t>(nbytes), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot map ", format_bytes(nbytes), " for a weight: ", std::strerror(errno)));
  }
  const size_t length = static_cast<size_t>(nbytes);
  return torch::from_blob(
      p, shape, [length](void* q) { ::munmap(q, length); }, options);
}

}  // namespace diffusiond
