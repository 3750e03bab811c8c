#include "core/memory/allocator.h"

#include <malloc.h>

namespace diffusiond {

bool tune_allocator_for_serving(int64_t mmap_threshold_bytes) {
  const int threshold = static_cast<int>(mmap_threshold_bytes);
  const bool mmap_ok = mallopt(M_MMAP_THRESHOLD, threshold) == 1;
  const bool trim_ok = mallopt(M_TRIM_THRESHOLD, 2 * threshold) == 1;
  return mmap_ok && trim_ok;
}

void release_free_heap_to_os() { malloc_trim(0); }

}  // namespace diffusiond
