// Clock: the real clock's waits, and FakeClock, whose advance() wakes every
// waiter, so code that waits for deadlines is tested without sleeping.
#include "core/util/clock.h"

#include <thread>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_clock.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::FakeClock;

TEST(RealClock, WaitsUntilAPastDeadlineReturnAtOnce) {
  Clock* clock = real_clock();
  Mutex mu;
  CondVar cv;
  MutexLock lock(&mu);
  EXPECT_TRUE(clock->wait_until(&cv, &mu, clock->now() - absl::Seconds(1)));
  clock->sleep_until(clock->now() - absl::Seconds(1));  // returns, does not hang
}

TEST(FakeClock, TimeMovesOnlyWhenAdvanced) {
  FakeClock clock;
  const absl::Time start = clock.now();
  EXPECT_EQ(clock.now(), start);
  clock.advance(absl::Minutes(5));
  EXPECT_EQ(clock.now(), start + absl::Minutes(5));
}

TEST(FakeClock, AdvanceWakesASleeperAtItsDeadline) {
  FakeClock clock;
  std::atomic<bool> woke{false};
  std::thread sleeper([&] {
    clock.sleep_for(absl::Hours(1));
    woke = true;
  });
  ASSERT_TRUE(clock.await_waiters(1));
  clock.advance(absl::Minutes(59));
  EXPECT_FALSE(woke.load());  // still short of the deadline: it waits again
  ASSERT_TRUE(clock.await_waiters(1));
  clock.advance(absl::Minutes(1));
  sleeper.join();
  EXPECT_TRUE(woke.load());
}

TEST(FakeClock, ASignalEndsAWaitBeforeTheDeadline) {
  FakeClock clock;
  Mutex mu;
  CondVar cv;
  bool ready = false;
  bool timed_out = true;
  std::thread waiter([&] {
    MutexLock lock(&mu);
    while (!ready) {
      if (clock.wait_until(&cv, &mu, absl::InfiniteFuture())) break;
    }
    timed_out = !ready;
  });
  ASSERT_TRUE(clock.await_waiters(1));
  {
    MutexLock lock(&mu);
    ready = true;
  }
  cv.signal_all();
  waiter.join();
  EXPECT_FALSE(timed_out);
}

}  // namespace
}  // namespace diffusiond
