// Point-in-time statistics of a ModelCache, for GetStats, metrics and CLIs.
#ifndef DIFFUSIOND_CORE_CACHE_CACHE_STATS_H_
#define DIFFUSIOND_CORE_CACHE_CACHE_STATS_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "core/memory/budget.h"
#include "core/memory/device.h"

namespace diffusiond {

struct CacheEntryStats {
  std::string key;
  bool loading = false;   // the loader is still running
  bool draining = false;  // an unload waits for its pins
  std::array<int64_t, kNumDevices> bytes{};  // committed charge per device
  int pins = 0;    // in-flight users, leases included
  int leases = 0;
  absl::Duration idle_age;  // since the last pin was taken or released
};

struct CacheStats {
  int64_t hits = 0;         // get_or_load served from the cache or a shared load
  int64_t misses = 0;       // get_or_load that ran a loader
  int64_t failed_loads = 0; // loaders that returned an error
  int64_t evictions = 0;    // entries removed by make_room
  int64_t unloads = 0;      // entries removed by unload()
  int64_t rejections = 0;   // make_room calls refused
  int64_t leases_expired = 0;
  int64_t room_waits = 0;  // make_room calls that waited in line for room
  int room_waiting = 0;    // make_room calls in line now
  // One snapshot per configured budget (RAM always; VRAM when configured).
  std::vector<BudgetSnapshot> budgets;
  std::vector<CacheEntryStats> entries;  // most recently used first
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_CACHE_CACHE_STATS_H_
