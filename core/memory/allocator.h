// Tuning of glibc malloc for a daemon that alternates denoise steps (large,
// short-lived activations) with model loads and evictions.
//
// Page faults are the dominant cost of fresh memory (~3 s/GiB on the
// development VM). glibc's default sends every block above its dynamic mmap
// threshold (at most 32 MiB) to a fresh mapping, so each attention score
// matrix is faulted in anew on every step: a demo step took 5 s, of which
// 4.6 s were faults. A high fixed threshold keeps activations in the heap,
// where freed memory is reused, and the trim threshold stops glibc from
// returning it between steps. Model weights do not depend on this: the
// loader gives them their own mappings (core/loader/weight_allocation.h),
// returned to the kernel when the model goes, and the cache calls
// release_free_heap_to_os() after evictions.
#ifndef DIFFUSIOND_CORE_MEMORY_ALLOCATOR_H_
#define DIFFUSIOND_CORE_MEMORY_ALLOCATOR_H_

#include <cstdint>

namespace diffusiond {

// Blocks below this come from the heap. Default 256 MiB.
inline constexpr int64_t kServingMmapThresholdBytes = int64_t{256} << 20;

// Fixes glibc's mmap threshold at `mmap_threshold_bytes` (disabling the
// dynamic adjustment) and its trim threshold at twice that. Call once at
// startup. Returns false if glibc refused a setting.
bool tune_allocator_for_serving(int64_t mmap_threshold_bytes = kServingMmapThresholdBytes);

// Returns free heap pages to the kernel (malloc_trim). Called after
// evictions and unloads.
void release_free_heap_to_os();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MEMORY_ALLOCATOR_H_
