#include "core/memory/activation_arena_scope.h"

#include <c10/core/CPUAllocator.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "core/util/mutex.h"
#include "kernels/torch_compat.h"

namespace diffusiond {
namespace {

thread_local ActivationArena* t_bound = nullptr;
thread_local int t_paused = 0;

struct MappedArena {
  std::unique_ptr<ActivationArena> arena;
  bool bound = true;  // a scope still holds it
};

// Every mapped arena, and the lock that serialises them: a tensor may be
// freed on any thread. Calls allocate a few hundred blocks per step, so one
// lock costs nothing measurable. Never destroyed: tensors are freed during
// exit too.
struct Registry {
  Mutex mu;
  std::vector<MappedArena> arenas ABSL_GUARDED_BY(mu);

  // Unmaps the arena once no scope and no tensor holds it.
  void retire_if_unused(ActivationArena* arena) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    auto it = std::find_if(arenas.begin(), arenas.end(), [&](const MappedArena& m) { return m.arena.get() == arena; });
    if (it != arenas.end() && !it->bound && it->arena->stats().live_blocks == 0) arenas.erase(it);
  }
};

Registry& registry() {
  static auto* r = new Registry;
  return *r;
}

class RoutingAllocator;
RoutingAllocator* g_router = nullptr;

// libtorch's CPU allocator while installed (core/memory/activation_arena_scope.h).
class RoutingAllocator final : public compat::Allocator {
 public:
  explicit RoutingAllocator(c10::Allocator* heap) : heap_(heap), heap_raw_deleter_(heap->raw_deleter()) {}

  // ctx == data, so libtorch's raw interface works for arena blocks too.
  c10::DeleterFnPtr raw_deleter() const override { return &free_routed; }

 protected:
  c10::DataPtr allocate_data(size_t bytes) const override {
    ActivationArena* arena = t_bound;
    if (arena != nullptr && t_paused == 0 && static_cast<int64_t>(bytes) >= kMinArenaBytes) {
      Registry& r = registry();
      MutexLock lock(&r.mu);
      if (void* p = arena->allocate(static_cast<int64_t>(bytes))) {
        return c10::DataPtr(p, p, &free_routed, c10::Device(c10::DeviceType::CPU));
      }
      // The heap serves it; the arena's free pages go first, so that the
      // two together hold about the live tensors.
      arena->release_free_pages();
    }
    return heap_->allocate(bytes);
  }

 private:
  static void free_routed(void* data) {
    if (data == nullptr) return;
    {
      Registry& r = registry();
      MutexLock lock(&r.mu);
      for (MappedArena& m : r.arenas) {
        if (!m.arena->contains(data)) continue;
        ActivationArena* arena = m.arena.get();
        arena->free(data);
        r.retire_if_unused(arena);
        return;
      }
    }
    // A heap block that libtorch's raw interface hands back.
    g_router->heap_raw_deleter_(data);
  }

  c10::Allocator* const heap_;
  const c10::DeleterFnPtr heap_raw_deleter_;
};

// Installs the router once, over whatever CPU allocator libtorch has.
// Returns false where another allocator of the highest priority holds the
// place: arenas then stay unused.
bool install_router() {
  static const bool installed = [] {
    c10::Allocator* heap = c10::GetCPUAllocator();
    g_router = new RoutingAllocator(heap);
    c10::SetCPUAllocator(g_router, std::numeric_limits<uint8_t>::max());
    return c10::GetCPUAllocator() == g_router;
  }();
  return installed;
}

}  // namespace

ActivationArenaScope::ActivationArenaScope(int64_t capacity_bytes) {
  if (capacity_bytes <= 0 || !install_router()) return;
  absl::StatusOr<std::unique_ptr<ActivationArena>> mapped = ActivationArena::map(capacity_bytes);
  if (!mapped.ok()) return;
  arena_ = mapped->get();
  {
    Registry& r = registry();
    MutexLock lock(&r.mu);
    r.arenas.push_back(MappedArena{std::move(*mapped)});
  }
  outer_ = t_bound;
  t_bound = arena_;
}

ActivationArenaScope::~ActivationArenaScope() {
  if (arena_ == nullptr) return;
  t_bound = outer_;
  Registry& r = registry();
  MutexLock lock(&r.mu);
  arena_->release_free_pages();
  for (MappedArena& m : r.arenas) {
    if (m.arena.get() == arena_) m.bound = false;
  }
  r.retire_if_unused(arena_);
}

void ActivationArenaScope::release_free_pages() {
  if (arena_ == nullptr) return;
  Registry& r = registry();
  MutexLock lock(&r.mu);
  arena_->release_free_pages();
}

ActivationArenaStats ActivationArenaScope::stats() const {
  if (arena_ == nullptr) return {};
  Registry& r = registry();
  MutexLock lock(&r.mu);
  return arena_->stats();
}

ActivationArenaPause::ActivationArenaPause() { ++t_paused; }
ActivationArenaPause::~ActivationArenaPause() { --t_paused; }

int mapped_activation_arenas() {
  Registry& r = registry();
  MutexLock lock(&r.mu);
  return static_cast<int>(r.arenas.size());
}

}  // namespace diffusiond
