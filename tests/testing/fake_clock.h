// FakeClock: the test double for Clock. Time moves only when a test says so;
// advance() wakes every thread waiting on the clock so it can see the new
// time, so lease, idle and drain tests never sleep.
#ifndef DIFFUSIOND_TESTS_TESTING_FAKE_CLOCK_H_
#define DIFFUSIOND_TESTS_TESTING_FAKE_CLOCK_H_

#include <set>

#include "absl/time/clock.h"
#include "core/util/clock.h"
#include "core/util/mutex.h"

namespace diffusiond::testing {

// Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::UnixEpoch() + absl::Hours(24)) : now_(start) {}

  absl::Time now() override {
    MutexLock lock(&mu_);
    return now_;
  }

  bool wait_until(CondVar* cv, Mutex* mu, absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) override {
    {
      MutexLock lock(&mu_);
      if (now_ >= deadline) return true;
      waiters_.insert(cv);
      waiting_.signal_all();
    }
    // advance() signals `cv`; the short real bound covers an advance that
    // lands between the check above and this wait (a spurious wake to the
    // caller, who re-checks).
    cv->wait_until(mu, absl::Now() + absl::Milliseconds(20));
    MutexLock lock(&mu_);
    waiters_.erase(waiters_.find(cv));
    return now_ >= deadline;
  }

  // Moves time forward by `d` and wakes every waiter.
  void advance(absl::Duration d) {
    MutexLock lock(&mu_);
    now_ += d;
    // Under mu_, so a waiter cannot leave and destroy its CondVar meanwhile.
    for (CondVar* cv : waiters_) cv->signal_all();
  }

  // Blocks (in real time, at most `timeout`) until at least `n` threads wait
  // on this clock; returns whether they did.
  bool await_waiters(int n, absl::Duration timeout = absl::Seconds(30)) {
    const absl::Time deadline = absl::Now() + timeout;
    MutexLock lock(&mu_);
    while (static_cast<int>(waiters_.size()) < n) {
      if (waiting_.wait_until(&mu_, deadline) && static_cast<int>(waiters_.size()) < n) return false;
    }
    return true;
  }

 private:
  Mutex mu_;
  CondVar waiting_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  std::multiset<CondVar*> waiters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace diffusiond::testing

#endif  // DIFFUSIOND_TESTS_TESTING_FAKE_CLOCK_H_
