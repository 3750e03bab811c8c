// Tuning of glibc malloc so that freed model weights leave the process's RSS.
//
// glibc raises its mmap threshold dynamically (up to 32 MiB) after large
// blocks are freed; later allocations below it then come from the heap,
// whose free pages are only returned at the top. A long-running daemon that
// loads and evicts models would see RSS ratchet up. Fixing the threshold
// keeps every large tensor on its own mapping, returned on free.
#ifndef DIFFUSIOND_CORE_MEMORY_ALLOCATOR_H_
#define DIFFUSIOND_CORE_MEMORY_ALLOCATOR_H_

#include <cstdint>

namespace diffusiond {

// Fixes the mmap threshold at `mmap_threshold_bytes` (disabling the dynamic
// adjustment) and the trim threshold at twice that. Call once at startup,
// before loading models. Returns false if glibc refused a setting.
bool tune_allocator_for_serving(int64_t mmap_threshold_bytes = 1 << 20);

// Returns free heap pages to the kernel (malloc_trim). Called after
// evictions, whose small allocations (names, metadata) may pin heap pages.
void release_free_heap_to_os();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MEMORY_ALLOCATOR_H_
