// Memory for loaded weights. Large tensors get their own anonymous mapping
// (core/memory/anonymous_mapping.h), made resident up front in huge pages
// where the kernel grants them: the kernel then fills memory in bulk
// instead of one fault per 4 KiB page during the read (1 GiB of bf16 loaded
// at 0.58 GB/s in 4 KiB pages and at several GB/s in huge pages on the
// development VM, docs/benchmarks.md "Weight memory"), and freeing the
// tensor unmaps it, so eviction returns the memory to the kernel whatever
// the allocator does.
#ifndef DIFFUSIOND_CORE_LOADER_WEIGHT_ALLOCATION_H_
#define DIFFUSIOND_CORE_LOADER_WEIGHT_ALLOCATION_H_

#include <torch/types.h>

#include <vector>

#include "absl/status/statusor.h"

namespace diffusiond {

// Tensors at least this large get their own mapping.
inline constexpr int64_t kMappedWeightMinBytes = int64_t{1} << 20;

// Returns an uninitialised CPU tensor of `shape` and `dtype`. Returns
// RESOURCE_EXHAUSTED if the kernel refuses the memory.
absl::StatusOr<torch::Tensor> allocate_weight(const std::vector<int64_t>& shape,
                                              torch::ScalarType dtype);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_LOADER_WEIGHT_ALLOCATION_H_
