// ModelCache: the models held in memory, admission by reservation
// (make_room), single-flight loading, pins, leases and unload.
//
// Not here: how a model is read (core/checkpoint) or what it is
// (core/models); the cache sees values only as CacheValue and bytes only
// through the Reservations a loader commits.
#ifndef DIFFUSIOND_CORE_CACHE_MODEL_CACHE_H_
#define DIFFUSIOND_CORE_CACHE_MODEL_CACHE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/cache/cache_observer.h"
#include "core/cache/cache_stats.h"
#include "core/cache/cache_value.h"
#include "core/cache/internal/entry.h"
#include "core/cache/load_slot.h"
#include "core/cache/pin.h"
#include "core/memory/budget.h"
#include "core/util/cancellation.h"
#include "core/util/clock.h"
#include "core/util/mutex.h"

namespace diffusiond {

// Runs outside the cache lock. It normally calls make_room() on the same
// cache, allocates against the returned Reservation, and returns both.
using Loader = std::function<absl::StatusOr<LoadedValue>()>;

// What claim() hands out: the key's value pinned, or the duty to load it.
using Claim = std::variant<Pin, LoadSlot>;

using LeaseId = uint64_t;

struct ModelCacheOptions {
  Budget* ram_budget = nullptr;   // required; not owned
  Budget* vram_budget = nullptr;  // optional (CUDA builds); not owned
  Clock* clock = nullptr;         // default: real_clock()
  CacheObserver* observer = nullptr;  // optional; not owned
  // Return freed heap pages to the kernel after each eviction or unload, so
  // RSS follows the budget down. Default true.
  bool trim_heap_after_eviction = true;
  // How long a make_room call that asks to wait (RoomWait) may wait, in
  // line, for memory that work in flight holds. Default 0: none waits.
  absl::Duration max_room_wait = absl::ZeroDuration();
};

// Bytes reserved beside a pinned entry (ModelCache::make_room_beside).
struct PinnedRoom {
  Pin pin;
  Reservation reservation;
};

// Whether a make_room call that does not fit now waits for room.
struct RoomWait {
  // False: refuse at once. True: wait in FIFO order, up to the cache's
  // max_room_wait, unless the request could never fit.
  bool wait = false;
  // Ends the wait with the token's reason (e.g. CANCELLED: the caller left).
  CancellationToken cancel;
};

struct UnloadOptions {
  // Wait for pins (in-flight work and leases) to drain. When false an
  // entry that is pinned or still loading fails with FAILED_PRECONDITION.
  bool wait = true;
  // How long to wait, on the cache's clock; past it the unload fails with
  // DEADLINE_EXCEEDED and the entry stays loaded.
  absl::Duration timeout = absl::InfiniteDuration();
  // Wakes the wait and ends it at once with the token's reason (e.g.
  // CANCELLED); the entry stays loaded. Default: never cancelled.
  CancellationToken cancel;
};

struct UnloadResult {
  std::array<int64_t, kNumDevices> freed_bytes{};
};

// Thread-safe. Budgets, clock and observer must outlive the cache; every Pin
// must be released before the cache is destroyed.
class ModelCache {
 public:
  // Returns INVALID_ARGUMENT if options.ram_budget is missing or a budget is
  // configured for the wrong device.
  static absl::StatusOr<std::unique_ptr<ModelCache>> create(
      const ModelCacheOptions& options);
  ModelCache(const ModelCache&) = delete;
  ModelCache& operator=(const ModelCache&) = delete;
  ~ModelCache();

  // Evicts least-recently-used unpinned entries until `bytes` fit on
  // `device`, then reserves them. If they cannot fit even after evicting
  // every unpinned entry, evicts nothing and returns RESOURCE_EXHAUSTED
  // stating needed, available and evictable bytes. Returns
  // FAILED_PRECONDITION if no budget is configured for `device`. When
  // `evicted` is given, the keys this call evicted are appended to it, in
  // eviction order: callers report what they caused, not a diff of stats.
  //
  // With `wait.wait`, a request that does not fit because work in flight
  // holds memory (pins, reservations) joins a FIFO line instead, and is
  // admitted when it reaches the front and fits, or refused when
  // max_room_wait passes or `wait.cancel` fires. It is refused at once
  // when it could never fit: more than the budget less what leases hold,
  // which no call's end frees. A request that arrives while others wait
  // queues behind them even if it would fit (no starvation of large ones).
  absl::StatusOr<Reservation> make_room(int64_t bytes, Device device, std::vector<std::string>* evicted = nullptr,
                                        const RoomWait& wait = {});

  // make_room for work on the ready entry `key`: `key` is never evicted to
  // make the room, and it is pinned in the same step as the bytes are
  // reserved. A call that waits therefore holds nothing while it waits, so
  // no waiter's pin can keep the line from moving. NOT_FOUND if `key` is
  // not ready, or left the cache while this waited (the caller loads it
  // again).
  absl::StatusOr<PinnedRoom> make_room_beside(absl::string_view key, int64_t bytes, Device device,
                                              std::vector<std::string>* evicted = nullptr, const RoomWait& wait = {});

  // Returns `key` pinned if it is loaded; otherwise makes the caller its
  // loader by returning a LoadSlot, exactly once however many threads ask
  // at the same time: the others wait here and share the slot's result,
  // error included. Returns ABORTED if `key` is being unloaded.
  absl::StatusOr<Claim> claim(absl::string_view key);

  // claim(), running `loader` for a slot and finishing it with the result
  // (an exception from the loader becomes INTERNAL). REQUIRES: `loader` does
  // not ask for the same key.
  absl::StatusOr<Pin> get_or_load(absl::string_view key, const Loader& loader);

  // Returns `key` pinned if it is loaded and not draining, NOT_FOUND if not.
  absl::StatusOr<Pin> get(absl::string_view key);

  // Calls `read` with `key`'s value if it is loaded (draining included),
  // under the cache's lock, without pinning it or counting a use, so a
  // listing does not reorder eviction. Returns whether it was called.
  // REQUIRES: `read` is quick and does not call the cache.
  bool peek(absl::string_view key, const std::function<void(const CacheValue&)>& read) const;

  // Removes `key` once its pins drain (see UnloadOptions) and returns the
  // bytes freed. NOT_FOUND if it is not loaded.
  absl::StatusOr<UnloadResult> unload(absl::string_view key,
                                      const UnloadOptions& options = {});

  // Pins `key` for `ttl` on behalf of a remote client. NOT_FOUND if it is
  // not loaded; INVALID_ARGUMENT if ttl is not positive.
  absl::StatusOr<LeaseId> acquire_lease(absl::string_view key, absl::Duration ttl);
  // Extends a lease to now + ttl. NOT_FOUND if unknown or already expired.
  absl::Status renew_lease(LeaseId lease, absl::Duration ttl);
  // Ends a lease. NOT_FOUND if unknown or already expired.
  absl::Status release_lease(LeaseId lease);
  // Ends leases whose deadline has passed and returns how many. Every other
  // method but stats() also does this first; a server may call it from a
  // timer so that stats() and idle models see expiries promptly.
  int expire_leases();

  CacheStats stats() const;

 private:
  using Entry = cache_internal::Entry;
  struct Lease {
    std::shared_ptr<Entry> entry;
    absl::Time deadline;
  };

  explicit ModelCache(const ModelCacheOptions& options);
  friend class Pin;
  friend class LoadSlot;
  void unpin(Entry& entry);

  Budget* budget_for(Device device) const;
  // What make_room weighs: the budget, and the entries on the device by
  // whether eviction may take them.
  struct RoomFigures {
    BudgetSnapshot snapshot;
    std::vector<std::shared_ptr<Entry>> candidates;  // ready and unpinned
    int64_t evictable = 0;                           // the candidates' bytes
    int64_t pinned = 0;                              // pinned, loading or draining entries' bytes
    int pinned_entries = 0;
    int64_t leased = 0;  // of those, entries only leases pin
    int64_t kept = 0;    // of those, the entry the room is for
  };
  // `kept` (may be null) counts as held for good: the work is for it.
  RoomFigures room_figures_locked(const Budget& budget, Device device, const Entry* kept) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // make_room and make_room_beside: with `keep`, that entry is kept out of
  // eviction and pinned into `*pinned` with the reservation.
  absl::StatusOr<Reservation> make_room_for(const absl::string_view* keep, int64_t bytes, Device device,
                                            std::vector<std::string>* evicted, const RoomWait& wait, Pin* pinned)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Evicts the least recently used candidates until `bytes` are available,
  // then reserves them. `device` and `keep` (may be null) go into the
  // evictions' reason.
  absl::StatusOr<Reservation> admit_locked(Budget& budget, int64_t bytes, Device device, const absl::string_view* keep,
                                           RoomFigures& room, std::vector<std::string>* evicted,
                                           std::vector<CacheEvent>* events) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Returns the entry for `key` if it is ready, NOT_FOUND otherwise.
  absl::StatusOr<std::shared_ptr<Entry>> ready_entry_locked(absl::string_view key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Marks `entry` as the most recently used.
  void touch_locked(Entry& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Pin pin_locked(const std::shared_ptr<Entry>& entry)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int expire_leases_locked()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The earliest lease deadline; InfiniteFuture() if there is no lease.
  absl::Time next_lease_expiry_locked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits, for unload(), until `entry` has no pins, `deadline` passes or
  // `cancel` fires, ending leases as they expire.
  void await_unpinned_locked(const Entry& entry, absl::Time deadline, const CancellationToken& cancel)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes `entry` out of the map and frees its memory, then its charges.
  CacheEvent remove_locked(const std::shared_ptr<Entry>& entry, CacheEvent::Kind kind)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<Pin> finish_load(const std::shared_ptr<Entry>& entry,
                                  absl::StatusOr<LoadedValue> loaded,
                                  absl::Duration took, std::vector<CacheEvent>* events)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Delivers events to the observer and trims the heap after removals.
  void publish(const std::vector<CacheEvent>& events) ABSL_LOCKS_EXCLUDED(mu_);

  Budget* const ram_budget_;
  Budget* const vram_budget_;
  Clock* const clock_;
  CacheObserver* const observer_;
  const bool trim_heap_after_eviction_;
  const absl::Duration max_room_wait_;

  mutable Mutex mu_;
  CondVar changed_;  // any entry changed state or lost a pin
  std::map<std::string, std::shared_ptr<Entry>, std::less<>> entries_
      ABSL_GUARDED_BY(mu_);
  std::map<LeaseId, Lease> leases_ ABSL_GUARDED_BY(mu_);
  LeaseId next_lease_id_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t tick_ ABSL_GUARDED_BY(mu_) = 0;
  CacheStats counters_ ABSL_GUARDED_BY(mu_);  // budgets/entries left empty
  // make_room calls waiting for room, by ticket, oldest first.
  std::deque<uint64_t> room_line_ ABSL_GUARDED_BY(mu_);
  uint64_t next_room_ticket_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_CACHE_MODEL_CACHE_H_
