// Memory for loaded weights. Large tensors get their own anonymous mapping
// (core/memory/anonymous_mapping.h) in huge pages where the kernel grants
// them: the kernel then fills memory in bulk instead of one fault per 4 KiB
// page during the read (1 GiB of bf16 loaded at 0.58 GB/s in 4 KiB pages
// and at several GB/s in huge pages on the development VM,
// docs/benchmarks.md "Weight memory"), and freeing the tensor unmaps it, so
// eviction returns the memory to the kernel whatever the allocator does.
#ifndef DIFFUSIOND_CORE_LOADER_WEIGHT_ALLOCATION_H_
#define DIFFUSIOND_CORE_LOADER_WEIGHT_ALLOCATION_H_

#include <torch/types.h>

#include <vector>

#include "absl/status/statusor.h"
#include "core/memory/anonymous_mapping.h"

namespace diffusiond {

// Tensors at least this large get their own mapping.
inline constexpr int64_t kMappedWeightMinBytes = int64_t{1} << 20;

// Returns an uninitialised CPU tensor of `shape` and `dtype`. A mapped one
// is resident on return with Residency::kNow; with kLazy its pages become
// resident as they are written or made resident (make_resident: the
// streaming loader does it part by part, on every core, just before each
// part is written, since zeroing fresh pages is most of a warm load's
// time). Returns RESOURCE_EXHAUSTED if the kernel refuses the memory.
absl::StatusOr<torch::Tensor> allocate_weight(const std::vector<int64_t>& shape, torch::ScalarType dtype,
                                              Residency residency = Residency::kNow);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_LOADER_WEIGHT_ALLOCATION_H_
