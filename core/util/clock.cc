#include "core/util/clock.h"

#include "absl/time/clock.h"

namespace diffusiond {
namespace {

class RealClock final : public Clock {
 public:
  absl::Time now() override { return absl::Now(); }
  bool wait_until(CondVar* cv, Mutex* mu, absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) override {
    return cv->wait_until(mu, deadline) || absl::Now() >= deadline;
  }
};

}  // namespace

void Clock::sleep_until(absl::Time deadline) {
  // Nobody signals this condition variable: only the deadline ends the wait.
  Mutex mu;
  CondVar cv;
  MutexLock lock(&mu);
  while (!wait_until(&cv, &mu, deadline)) {
  }
}

Clock* real_clock() {
  // Leaked on purpose: statics must be trivially destructible, and the clock
  // must outlive every component that may still read it during shutdown.
  static Clock* const clock = new RealClock();
  return clock;
}

}  // namespace diffusiond
