// Splits one range of bytes into parts and runs them in parallel: how
// a load reads and casts a tensor's chunk on every core it may use. One
// thread reading while another casts keeps the storage and the cores busy
// at once, with no staging beyond the chunk's (each part owns its slice).
#ifndef DIFFUSIOND_CORE_LOADER_PARALLEL_PARTS_H_
#define DIFFUSIOND_CORE_LOADER_PARALLEL_PARTS_H_

#include <cstdint>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"

namespace diffusiond {

// Runs part(begin, end) over [0, n) cut into at most libtorch's intra-op
// thread count of pieces (the daemon sets it to the CPUs it may use), each a
// multiple of `align` bytes (but the last) and at least `min_part` bytes, on
// libtorch's own pool: a cast inside a part then runs on its one thread
// rather than starting another team. Returns the first error in part
// order; exceptions a part throws become statuses (status_of).
absl::Status run_parts(int64_t n, int64_t align, int64_t min_part,
                       absl::FunctionRef<absl::Status(int64_t begin, int64_t end)> part);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_LOADER_PARALLEL_PARTS_H_
