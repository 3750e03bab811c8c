// One engine call's CPU activations served from an ActivationArena
// (core/memory/activation_arena.h) sized by the call's reservation.
//
// libtorch's CPU allocator is replaced once, the first time a scope is
// made, by one that routes: a tensor of kMinArenaBytes or more allocated by
// a thread with an arena bound comes from that arena; everything else
// (small tensors, other threads, no scope) from the allocator that was
// there before. A tensor the arena cannot fit comes from that allocator
// too, after the arena's free pages are given back, so that the two
// together hold no more than the live tensors: a call never holds more
// than its reservation because of the arena.
//
// When the scope ends the arena's free pages go back to the kernel, and
// the mapping goes when its last tensor is freed: a tensor the call
// returns (a step's output) stays valid for as long as its holder keeps it.
#ifndef DIFFUSIOND_CORE_MEMORY_ACTIVATION_ARENA_SCOPE_H_
#define DIFFUSIOND_CORE_MEMORY_ACTIVATION_ARENA_SCOPE_H_

#include <cstdint>

#include "core/memory/activation_arena.h"

namespace diffusiond {

// Smaller tensors stay on the heap, whose small-size classes already reuse
// memory without faults; an arena block is a whole number of pages.
inline constexpr int64_t kMinArenaBytes = int64_t{64} << 10;

class ActivationArenaScope {
 public:
  // Maps an arena of `capacity_bytes` and binds it to the calling thread,
  // in place of any bound before, until the scope ends. Binds nothing when
  // capacity_bytes <= 0 or the mapping fails: the heap serves, as without.
  explicit ActivationArenaScope(int64_t capacity_bytes);
  ActivationArenaScope(const ActivationArenaScope&) = delete;
  ActivationArenaScope& operator=(const ActivationArenaScope&) = delete;
  ~ActivationArenaScope();

  bool bound() const { return arena_ != nullptr; }
  // Gives the arena's free pages back now: a call that lets its
  // reservation go before it ends (Wan 2.2's first expert).
  void release_free_pages();
  // The arena's counters so far; zeros when nothing is bound.
  ActivationArenaStats stats() const;

 private:
  ActivationArena* arena_ = nullptr;  // owned by the routing allocator's registry
  ActivationArena* outer_ = nullptr;  // the thread's arena before this scope
};

// While it lives, the calling thread's tensors come from the heap whatever
// arena is bound: a load inside a call (Wan 2.2's second expert) makes
// weights that outlive the call.
class ActivationArenaPause {
 public:
  ActivationArenaPause();
  ActivationArenaPause(const ActivationArenaPause&) = delete;
  ActivationArenaPause& operator=(const ActivationArenaPause&) = delete;
  ~ActivationArenaPause();
};

// Arenas still mapped: bound to a scope, or holding a tensor that outlived
// its scope.
int mapped_activation_arenas();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MEMORY_ACTIVATION_ARENA_SCOPE_H_
