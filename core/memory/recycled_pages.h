// RecycledPages: the resident weight mappings of the models a load evicts,
// handed to that load instead of back to the kernel. A model switch then
// writes its weights into memory that is already mapped and zeroed, where a
// fresh mapping would have the kernel zero every page again: that zeroing
// was half of a warm load's time (docs/benchmarks.md, "Model switches").
//
// The budget stays exact. An evicted model's charge is released when it is
// evicted, but the pages it leaves here are still resident, so they are
// held only for the one load that made room, and only while they fit in
// what its reservation has not yet charged:
//
//   resident bytes of the load's weights + recycled bytes <= its reservation
//
// The loader keeps that by calling limit_to() as it charges
// (core/loader/streaming_loader.cc); whatever is left when the load ends is
// unmapped. Nothing is recycled across loads or held between them.
//
// Not here: how mappings are made (anonymous_mapping.h), which allocations
// are weights (core/loader/weight_allocation.h).
#ifndef DIFFUSIOND_CORE_MEMORY_RECYCLED_PAGES_H_
#define DIFFUSIOND_CORE_MEMORY_RECYCLED_PAGES_H_

#include <cstdint>
#include <map>
#include <optional>

#include "core/memory/anonymous_mapping.h"

namespace diffusiond {

// Not thread-safe: one load's thread offers, takes and limits (evictions
// free on the thread that makes room, which is the loading thread).
class RecycledPages {
 public:
  // Holds at most `limit_bytes` (the reservation being made room for).
  explicit RecycledPages(int64_t limit_bytes) : limit_(limit_bytes) {}
  RecycledPages(const RecycledPages&) = delete;
  RecycledPages& operator=(const RecycledPages&) = delete;
  // Unmaps what no allocation took.
  ~RecycledPages();

  // Keeps `mapping` (resident, no longer charged to anyone) if it fits
  // under the limit; returns false, keeping nothing, otherwise.
  bool offer(const AnonymousMapping& mapping);
  // A resident mapping of round_up_to_pages(bytes): one of exactly that
  // length, else the front of the shortest longer one (its tail stays
  // here). nullopt when none is long enough. REQUIRES: bytes > 0.
  std::optional<AnonymousMapping> take(int64_t bytes);
  // Unmaps mappings, longest first, until at most `bytes` are held, and
  // holds at most that from now on.
  void limit_to(int64_t bytes);

  int64_t bytes() const { return bytes_; }
  // Bytes handed out by take() so far: what the kernel did not zero again.
  int64_t reused_bytes() const { return reused_bytes_; }

  // The pages this thread's weight frees go to and its weight allocations
  // come from, or null: set by a RecyclingScope.
  static RecycledPages* current();

 private:
  std::multimap<int64_t, AnonymousMapping> by_length_;
  int64_t bytes_ = 0;
  int64_t limit_;
  int64_t reused_bytes_ = 0;
};

// Makes `pages` this thread's RecycledPages::current() for the scope's
// life, restoring the previous one after (a load inside a call's load).
class RecyclingScope {
 public:
  explicit RecyclingScope(RecycledPages* pages);
  RecyclingScope(const RecyclingScope&) = delete;
  RecyclingScope& operator=(const RecyclingScope&) = delete;
  ~RecyclingScope();

 private:
  RecycledPages* const previous_;
};

// How a weight's mapping is freed: into this thread's recycled pages when a
// scope takes it, else back to the kernel.
void release_weight_mapping(const AnonymousMapping& mapping);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MEMORY_RECYCLED_PAGES_H_
