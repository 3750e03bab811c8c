// The clock seam: every component that reads the time (lease expiry, idle
// age, load latency) or waits for a deadline (unloads, drains, timers) goes
// through a Clock, so tests run on simulated time (as leveldb's Env and
// Envoy's TimeSource do).
//
// Not here: what is waited for. Callers keep their own Mutex/CondVar and
// condition; the clock only decides when a deadline has passed.
#ifndef DIFFUSIOND_CORE_UTIL_CLOCK_H_
#define DIFFUSIOND_CORE_UTIL_CLOCK_H_

#include "absl/time/time.h"
#include "core/util/mutex.h"

namespace diffusiond {

// A source of the current time that can also wait for a deadline.
// Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;

  // Returns the current time. Successive calls never go backwards.
  virtual absl::Time now() = 0;

  // Releases `mu`, waits until `cv` is signalled or this clock reaches
  // `deadline`, retakes `mu`. May wake spuriously, so callers re-check their
  // condition. Returns true if the deadline has passed on this clock.
  virtual bool wait_until(CondVar* cv, Mutex* mu, absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) = 0;

  // Blocks until this clock reaches `deadline`.
  void sleep_until(absl::Time deadline);
  void sleep_for(absl::Duration d) { sleep_until(now() + d); }
};

// Returns a process-wide clock backed by absl::Now() and real condition
// variable deadlines. It lives for the whole process.
Clock* real_clock();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_UTIL_CLOCK_H_
