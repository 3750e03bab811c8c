// VramTier: the VRAM half of the budget. Models stay loaded in RAM (the
// engine's ModelCache); what a model has on the device — its placement — is
// an entry of a second ModelCache whose only budget is VRAM. So placing
// follows the one admission rule: make_room on the VRAM budget evicts
// least-recently-used, unpinned placements, or refuses with
// RESOURCE_EXHAUSTED naming needed, available and evictable bytes. Evicting
// a placement frees device memory only: the RAM copy stays, and the next
// placement copies from it, never from disk.
//
// Torch-free: what a placement is (device_placement.h) is the caller's.
#ifndef DIFFUSIOND_CORE_VRAM_VRAM_TIER_H_
#define DIFFUSIOND_CORE_VRAM_VRAM_TIER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cache/model_cache.h"
#include "core/memory/budget.h"

namespace diffusiond {

struct VramTierOptions {
  Budget* vram_budget = nullptr;      // required, Device::kCuda; not owned
  CacheObserver* observer = nullptr;  // optional (logs, metrics); not owned
  Clock* clock = nullptr;             // default real_clock()
};

// Thread-safe.
class VramTier {
 public:
  // INVALID_ARGUMENT without a VRAM budget.
  static absl::StatusOr<std::unique_ptr<VramTier>> create(const VramTierOptions& options);

  // `key`'s placement, pinned (unevictable until the Pin goes). If there is
  // none, `place` builds it, once however many threads ask: it calls
  // make_room() for the bytes it will hold and returns them with the value.
  absl::StatusOr<Pin> acquire(const std::string& key, const Loader& place);
  // `key`'s placement pinned if there is one, NOT_FOUND otherwise.
  absl::StatusOr<Pin> find(const std::string& key);
  // Evicts LRU unpinned placements until `bytes` fit, then reserves them
  // (a placement being built, or a step's activations).
  absl::StatusOr<Reservation> make_room(int64_t bytes, std::vector<std::string>* evicted = nullptr);
  // Drops `key`'s placement once its pins drain (its RAM copy is going);
  // with `wait` false, only if nothing pins it (FAILED_PRECONDITION
  // otherwise). NOT_FOUND if it has none.
  absl::Status drop(const std::string& key, bool wait = true);

  // Calls `read` with `key`'s placement, if any, without pinning it or
  // counting a use (ModelCache::peek).
  bool peek(const std::string& key, const std::function<void(const CacheValue&)>& read) const {
    return placements_->peek(key, read);
  }

  const Budget& budget() const { return *budget_; }
  // The VRAM budget's snapshot and one entry per placement (bytes[kCuda]).
  CacheStats stats() const { return placements_->stats(); }

 private:
  VramTier(Budget* budget, std::unique_ptr<Budget> no_ram, std::unique_ptr<ModelCache> placements)
      : budget_(budget), no_ram_(std::move(no_ram)), placements_(std::move(placements)) {}

  Budget* const budget_;
  // Placements hold no RAM of their own; the inner cache still wants a
  // RAM budget, so it gets an empty one.
  const std::unique_ptr<Budget> no_ram_;
  const std::unique_ptr<ModelCache> placements_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_VRAM_VRAM_TIER_H_
