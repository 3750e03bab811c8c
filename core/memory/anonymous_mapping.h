// Anonymous memory mappings for large buffers that live as one piece: the
// loaded weights and the activation arenas. The one home of how they are
// mapped: at a huge-page boundary and advised to use transparent huge pages
// when at least one huge page long, and, where asked, made resident at once.
//
// Why huge pages: making memory resident costs one fault (or one page
// allocation) per page, and on a virtual machine that is 12 us or more per
// 4 KiB page. Filling 2 GiB of fresh 4 KiB pages ran at 0.29 GB/s on the
// development VM and at 4.8-5.4 GB/s with huge pages (docs/benchmarks.md,
// "Weight memory"). Residency stays exact: the kernel maps a huge page only
// where a whole aligned 2 MiB fits inside the mapping, and the tail keeps
// 4 KiB pages, so RSS never exceeds the mapping's length.
//
// Not here: what uses the memory (core/loader/weight_allocation.h,
// activation_arena.h), the heap's own tuning (allocator.h).
#ifndef DIFFUSIOND_CORE_MEMORY_ANONYMOUS_MAPPING_H_
#define DIFFUSIOND_CORE_MEMORY_ANONYMOUS_MAPPING_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace diffusiond {

// x86-64's PMD size; a transparent huge page is never another size there.
inline constexpr int64_t kHugePageBytes = int64_t{2} << 20;

// The kernel's base page size.
int64_t page_bytes();

// `bytes` rounded up to whole base pages.
int64_t round_up_to_pages(int64_t bytes);

struct AnonymousMapping {
  char* base = nullptr;
  int64_t length = 0;       // whole base pages
  bool huge_pages = false;  // advised MADV_HUGEPAGE (a hint the kernel may decline)
};

enum class Residency {
  kLazy,  // nothing resident until written; MAP_NORESERVE, the budget admits
  kNow,   // every page resident on return, as MAP_POPULATE, in huge pages where granted
};

// Maps `bytes` rounded up to whole pages, read-write and zero-filled; a
// mapping of a huge page or more starts on a huge-page boundary and is
// advised to use huge pages. The caller owns it and gives it back with
// unmap_anonymous(). INVALID_ARGUMENT for bytes <= 0; RESOURCE_EXHAUSTED
// when the kernel refuses the address space or, for Residency::kNow, the
// memory.
absl::StatusOr<AnonymousMapping> map_anonymous(int64_t bytes, Residency residency);

// Makes the whole pages inside [begin, begin + n) resident, as a write
// would (in huge pages where the mapping was advised them), and reports a
// failure rather than leaving it to the OOM killer; a page the range only
// partly covers is left to the caller's own write. Contents are unchanged,
// and pages already resident are left as they are, so disjoint parts of one
// mapping may be made resident from several threads at once: how a load
// spreads the kernel's zeroing of fresh memory over the cores, each part
// just before it writes there. REQUIRES: nothing else writes those pages
// meanwhile (a kernel without MADV_POPULATE_WRITE gets one read and write
// back per page).
absl::Status make_resident(void* begin, int64_t n);

// Gives `mapping` back to the kernel. A default-constructed mapping is a
// no-op.
void unmap_anonymous(const AnonymousMapping& mapping);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MEMORY_ANONYMOUS_MAPPING_H_
