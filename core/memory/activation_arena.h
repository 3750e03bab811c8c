// One call's activations in a mapping of their own, sized by the call's
// reservation and reused from tensor to tensor, the way ggml's graph
// allocator reuses one compute buffer.
//
// Why: a denoise step allocates and frees hundreds of activation tensors,
// most of them megabytes. The heap returns large freed extents to the
// kernel at once (jemalloc's oversize arena) and the engine purges the
// rest when a call ends, so that RSS stays within the reservations; every
// step then faults its activations in afresh. On a virtual machine a fault
// costs 12-14 us, and a mid-size Z-Image step lost about a fifth of its time
// to 106 k of them (docs/benchmarks.md). Here a page, once touched, serves
// every later tensor placed on it until the call ends, and the mapping can
// never hold more than the reservation admitted.
//
// Best fit, the lowest address among equals, neighbours merged when freed:
// blocks stay packed at the low end, so a step touches about its peak of
// live bytes. Blocks of an eighth of the capacity or more are placed at the
// top end instead, in the highest free block that fits, so that smaller
// tensors do not cut up their holes. Sizes are whole pages, so every free
// block's pages can be given back (release_free_pages) without touching a
// live one.
//
// An arena of a huge page or more is mapped on a huge-page boundary and
// advised to use transparent huge pages where the kernel allows them: a
// step then touches its 60 MB in tens of faults, not in fifteen thousand at
// 12 us each on a virtual machine. The kernel still maps no page beyond the
// mapping, so residency stays within the capacity admitted.
//
// Not thread-safe: core/memory/activation_arena_scope.h serialises it.
#ifndef DIFFUSIOND_CORE_MEMORY_ACTIVATION_ARENA_H_
#define DIFFUSIOND_CORE_MEMORY_ACTIVATION_ARENA_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "absl/status/statusor.h"

namespace diffusiond {

struct ActivationArenaStats {
  int64_t capacity_bytes = 0;
  int64_t live_bytes = 0;  // in blocks handed out and not yet freed
  int64_t live_blocks = 0;
  int64_t peak_live_bytes = 0;
  // The highest end of any block handed out since the last
  // release_free_pages (which lowers it to the highest live block): the
  // arena's pages above it, rounded up to the huge page where the arena uses
  // them, are not resident.
  int64_t high_water_bytes = 0;
  int64_t allocations = 0;
  int64_t refusals = 0;  // requests no free block could serve
};

class ActivationArena {
 public:
  // Maps `capacity_bytes`, rounded up to whole pages, of address space;
  // nothing is resident until a block is written. REQUIRES: capacity > 0.
  // The huge-page advice is a hint: an arena works the same without it.
  static absl::StatusOr<std::unique_ptr<ActivationArena>> map(int64_t capacity_bytes);
  ActivationArena(const ActivationArena&) = delete;
  ActivationArena& operator=(const ActivationArena&) = delete;
  // Unmaps the region. REQUIRES: no live blocks.
  ~ActivationArena();

  // A block of at least `bytes` (rounded up to whole pages, so page-aligned),
  // or nullptr when no free block is large enough: the caller then
  // allocates elsewhere. REQUIRES: bytes > 0.
  void* allocate(int64_t bytes);
  // REQUIRES: `data` came from allocate() and was not freed since.
  void free(void* data);
  bool contains(const void* data) const;

  // Gives the pages of every free block back to the kernel (MADV_DONTNEED);
  // the next write to them faults in a zeroed page. Returns the bytes given.
  int64_t release_free_pages();

  ActivationArenaStats stats() const;

 private:
  ActivationArena(char* base, int64_t capacity, int64_t touch_granule);

  // A block of capacity / kLargeFraction or more is a large one.
  static constexpr int64_t kLargeFraction = 8;

  char* const base_;
  const int64_t capacity_;
  // What one write can make resident: a page, or a huge page where the
  // arena advised them. Releases round the high water up to it.
  const int64_t touch_granule_;
  // Every block by its offset: its size, and whether it is free.
  std::map<int64_t, std::pair<int64_t, bool>> blocks_;
  // The free blocks as (size, offset): the best fit is the first not less
  // than (wanted, 0).
  std::set<std::pair<int64_t, int64_t>> free_;
  ActivationArenaStats stats_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MEMORY_ACTIVATION_ARENA_H_
