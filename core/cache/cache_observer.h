// CacheObserver: the seam through which server/ turns cache events into log
// lines and metrics without core/ knowing either.
#ifndef DIFFUSIOND_CORE_CACHE_CACHE_OBSERVER_H_
#define DIFFUSIOND_CORE_CACHE_CACHE_OBSERVER_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/memory/device.h"

namespace diffusiond {

struct CacheEvent {
  // kWaitedForRoom: a make_room call that waited in line, admitted or not
  // (status); duration: how long it waited.
  enum class Kind { kLoaded, kLoadFailed, kEvicted, kUnloaded, kRejected, kWaitedForRoom };
  Kind kind = Kind::kLoaded;
  std::string key;  // empty for kRejected
  Device device = Device::kCpu;  // kRejected: the device asked for
  std::array<int64_t, kNumDevices> bytes{};  // held, freed, or (kRejected) requested
  absl::Duration duration;                   // kLoaded/kLoadFailed: loader time; kWaitedForRoom: the wait
  absl::Status status;                       // kLoadFailed / kRejected: the error; kWaitedForRoom: the outcome
  // kEvicted: why, in one line (least recently used, to make room for how
  // many bytes on which device, beside which model).
  std::string reason;
};

// Receives events after the cache has released its lock, on the thread that
// caused them. Implementations must be thread-safe and must not block.
class CacheObserver {
 public:
  virtual ~CacheObserver() = default;
  virtual void on_cache_event(const CacheEvent& event) = 0;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_CACHE_CACHE_OBSERVER_H_
