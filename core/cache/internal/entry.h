// The cache's per-key record. Shared between ModelCache and Pin only;
// every field is guarded by the owning ModelCache's mutex.
#ifndef DIFFUSIOND_CORE_CACHE_INTERNAL_ENTRY_H_
#define DIFFUSIOND_CORE_CACHE_INTERNAL_ENTRY_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/cache/cache_value.h"
#include "core/memory/budget.h"
#include "core/memory/device.h"

namespace diffusiond {
namespace cache_internal {

enum class EntryState {
  kLoading,   // the loader runs; waiters block on the cache's CondVar
  kReady,     // value and charges are set
  kDraining,  // an unload waits for pins to drain; no new pins
  kRemoved,   // out of the map; load_status says why if the load failed
};

struct Entry {
  explicit Entry(std::string k) : key(std::move(k)) {}

  const std::string key;
  EntryState state = EntryState::kLoading;
  // Member order matters for teardown: the value (the memory) is destroyed
  // before the charges (the accounting) when an Entry dies.
  std::array<Charge, kNumDevices> charges;
  std::unique_ptr<CacheValue> value;
  int pins = 0;    // in-flight users, leases included
  int leases = 0;  // of those pins, how many are leases
  uint64_t last_use_tick = 0;  // LRU order; larger is more recent
  absl::Time last_use_time;
  absl::Time ready_time;
  absl::Status load_status;  // why a failed load ended, for its waiters

  int64_t bytes(Device d) const { return charges[static_cast<int>(d)].bytes(); }
};

}  // namespace cache_internal
}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_CACHE_INTERNAL_ENTRY_H_
