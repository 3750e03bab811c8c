// LoadSlot: the duty to load one key, handed by ModelCache::claim to the one
// caller that must run the load. Everyone else asking for the key waits in
// claim() until the slot is finished. The load itself runs with no cache
// call on the stack: the caller plans, takes its reservation with
// make_room(), allocates against it, and hands the result to finish().
#ifndef DIFFUSIOND_CORE_CACHE_LOAD_SLOT_H_
#define DIFFUSIOND_CORE_CACHE_LOAD_SLOT_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/cache/cache_value.h"
#include "core/cache/pin.h"
#include "core/memory/budget.h"

namespace diffusiond {

class ModelCache;
namespace cache_internal {
struct Entry;
}

// What a load hands back: the value and the reservations it charged its
// allocations to. The cache commits each reservation into the entry's charge.
struct LoadedValue {
  std::unique_ptr<CacheValue> value;
  std::vector<Reservation> reservations;
};

// Move-only. Destroying a slot that was not finished finishes it with
// CANCELLED, so waiters never hang on a load whose owner went away.
class LoadSlot {
 public:
  LoadSlot(LoadSlot&& other) noexcept;
  LoadSlot& operator=(LoadSlot&&) = delete;
  ~LoadSlot();

  // Publishes the load: on success commits every reservation into the
  // entry's charge, makes the value visible and returns it pinned (the pin
  // is taken before anyone else can see it, so it cannot be evicted in
  // between); on failure removes the entry, gives each waiter the same
  // status, and returns it. Call once.
  absl::StatusOr<Pin> finish(absl::StatusOr<LoadedValue> loaded);

 private:
  friend class ModelCache;
  LoadSlot(ModelCache* cache, std::shared_ptr<cache_internal::Entry> entry, absl::Time start)
      : cache_(cache), entry_(std::move(entry)), start_(start) {}

  ModelCache* cache_ = nullptr;
  std::shared_ptr<cache_internal::Entry> entry_;  // null once finished
  absl::Time start_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_CACHE_LOAD_SLOT_H_
