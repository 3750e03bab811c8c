#include "core/memory/allocator.h"

#include <malloc.h>

#include <cstddef>

#include "absl/strings/str_cat.h"

#ifdef DIFFUSIOND_HAVE_JEMALLOC
// jemalloc's control interface, declared here rather than through
// <jemalloc/jemalloc.h>, whose malloc declarations differ from glibc's
// <malloc.h> in exception specifications.
extern "C" int mallctl(const char* name, void* old_value, size_t* old_size, void* new_value, size_t new_size);

// Read by jemalloc when it starts, before main. Background threads purge
// free pages as they age (dirty_decay_ms, 10 s by default), so an idle
// daemon gives back what gRPC and small calls left; purged pages are
// returned at once (MADV_DONTNEED) rather than kept lazily freed
// (muzzy_decay_ms:0), so RSS shows what is live. Allocations above 8 MiB
// (oversize_threshold) come from an arena that returns them when freed.
extern "C" {
const char* malloc_conf = "background_thread:true,muzzy_decay_ms:0";
}
#endif

namespace diffusiond {

#ifdef DIFFUSIOND_HAVE_JEMALLOC

std::string allocator_name() {
  const char* version = nullptr;
  size_t size = sizeof(version);
  if (mallctl("version", &version, &size, nullptr, 0) != 0 || version == nullptr) return "jemalloc";
  return absl::StrCat("jemalloc ", version);
}

bool tune_allocator_for_serving() {
  bool background = false;
  size_t size = sizeof(background);
  return mallctl("background_thread", &background, &size, nullptr, 0) == 0 && background;
}

void release_free_heap_to_os() {
  // The calling thread's cache first, so its freed blocks reach the arenas.
  mallctl("thread.tcache.flush", nullptr, nullptr, nullptr, 0);
  // MALLCTL_ARENAS_ALL: every arena.
  mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0);
}

#else

namespace {
constexpr int kGlibcMmapThresholdBytes = 1 << 20;
}  // namespace

std::string allocator_name() { return "glibc malloc"; }

bool tune_allocator_for_serving() {
  const bool mmap_ok = mallopt(M_MMAP_THRESHOLD, kGlibcMmapThresholdBytes) == 1;
  const bool trim_ok = mallopt(M_TRIM_THRESHOLD, 2 * kGlibcMmapThresholdBytes) == 1;
  return mmap_ok && trim_ok;
}

void release_free_heap_to_os() { malloc_trim(0); }

#endif

}  // namespace diffusiond
