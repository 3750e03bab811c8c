// The clock seam: every component that measures time (lease expiry, idle age,
// load latency) takes a Clock* so tests can run on simulated time.
//
// Not here: timers or sleeping. Components that wait use absl::CondVar with
// real deadlines only where a real thread must block.
#ifndef DIFFUSIOND_CORE_UTIL_CLOCK_H_
#define DIFFUSIOND_CORE_UTIL_CLOCK_H_

#include "absl/time/time.h"

namespace diffusiond {

// A source of the current time. Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;

  // Returns the current time. Successive calls never go backwards.
  virtual absl::Time now() = 0;
};

// Returns a process-wide clock backed by absl::Now(). The object is
// trivially destructible and lives for the whole process.
Clock* real_clock();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_UTIL_CLOCK_H_
