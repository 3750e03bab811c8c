// FakeClock: the test double for Clock. Time moves only when a test says so.
#ifndef DIFFUSIOND_TESTS_TESTING_FAKE_CLOCK_H_
#define DIFFUSIOND_TESTS_TESTING_FAKE_CLOCK_H_

#include "core/util/mutex.h"
#include "core/util/clock.h"

namespace diffusiond::testing {

// Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::UnixEpoch() + absl::Hours(24))
      : now_(start) {}

  absl::Time now() override {
    MutexLock lock(&mu_);
    return now_;
  }
  void advance(absl::Duration d) {
    MutexLock lock(&mu_);
    now_ += d;
  }

 private:
  Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
};

}  // namespace diffusiond::testing

#endif  // DIFFUSIOND_TESTS_TESTING_FAKE_CLOCK_H_
