// The heap allocator of a daemon that alternates large, short-lived
// activations (denoise steps, encodes, decodes) with model loads, and that
// promises RSS within what it admitted (docs/memory-budget.md).
//
// jemalloc serves every process that links core/ outside sanitizer builds
// (Debian's libjemalloc2, linked whole, replaces malloc). glibc's heap grew
// RSS up to 2x an admitted call's reservation at the 256 MiB mmap threshold
// it needed for speed (activations freed in the middle of the heap cannot
// serve a larger tensor; per-thread arenas each keep their own), and kept it
// after the call. jemalloc's extents hold a call's peak within its estimate
// (a Step of a 224x224 Z-Image latent: glibc 1.13x the estimate, jemalloc
// 0.95x; docs/reliability.md has the table) at the same speed, and return
// free pages on demand: every engine call purges them when it ends, so RSS
// goes back to where it was. Model weights do not depend on any of this:
// the loader gives them their own mappings (core/loader/weight_allocation.h),
// and a CPU call's large activations come from an arena of the call's own
// (core/memory/activation_arena_scope.h).
//
// Without jemalloc (sanitizer builds, or -DDIFFUSIOND_JEMALLOC=OFF), glibc
// maps every block of 1 MiB or more on its own, which keeps RSS close to
// live bytes at the cost of page faults, and the purge is malloc_trim.
#ifndef DIFFUSIOND_CORE_MEMORY_ALLOCATOR_H_
#define DIFFUSIOND_CORE_MEMORY_ALLOCATOR_H_

#include <string>

namespace diffusiond {

// "jemalloc <version>" or "glibc malloc", for the daemon's startup log.
std::string allocator_name();

// Checks (jemalloc: background purging threads run) or applies (glibc:
// mallopt) the serving configuration. Call once at startup. Returns false
// if the allocator refused it.
bool tune_allocator_for_serving();

// Returns the heap's free pages to the kernel now: jemalloc purges every
// arena, glibc trims. Called when an engine call ends and after evictions
// and unloads.
void release_free_heap_to_os();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MEMORY_ALLOCATOR_H_
