// ModelCache::make_room with RoomWait: a request that does not fit because
// work in flight holds memory waits in FIFO order, up to max_room_wait or
// its cancellation, and is refused at once when it could never fit.
// Waits run on a FakeClock, so only an advance ends one by time.
#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "core/cache/model_cache.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/recording_observer.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::FakeClock;
using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;

class RoomWaitTest : public ::testing::Test {
 protected:
  RoomWaitTest() : ram_(Device::kCpu, 1000) {
    ModelCacheOptions options;
    options.ram_budget = &ram_;
    options.clock = &clock_;
    options.observer = &events_;
    options.max_room_wait = absl::Seconds(60);
    absl::StatusOr<std::unique_ptr<ModelCache>> cache = ModelCache::create(options);
    EXPECT_THAT(cache, IsOk());
    cache_ = std::move(*cache);
  }

  // make_room(bytes) on another thread, waiting with `cancel`.
  std::future<absl::StatusOr<Reservation>> wait_for(int64_t bytes, CancellationToken cancel = {}) {
    return std::async(std::launch::async, [this, bytes, cancel] {
      return cache_->make_room(bytes, Device::kCpu, nullptr, RoomWait{true, cancel});
    });
  }

  // Blocks until `n` callers wait in line.
  void await_line(int n) {
    while (cache_->stats().room_waiting != n) absl::SleepFor(absl::Milliseconds(1));
  }

  Budget ram_;
  FakeClock clock_;
  testing::RecordingObserver events_;
  std::unique_ptr<ModelCache> cache_;
};

TEST_F(RoomWaitTest, ACallWaitsForWorkInFlightAndIsAdmittedWhenItEnds) {
  absl::StatusOr<Reservation> held = cache_->make_room(700, Device::kCpu);
  ASSERT_THAT(held, IsOk());
  std::future<absl::StatusOr<Reservation>> waiting = wait_for(500);
  await_line(1);
  held->shrink_to(0);  // the call in flight ends
  absl::StatusOr<Reservation> admitted = waiting.get();
  ASSERT_THAT(admitted, IsOk());
  EXPECT_EQ(admitted->reserved_bytes(), 500);
  EXPECT_EQ(cache_->stats().room_waiting, 0);
  EXPECT_EQ(cache_->stats().room_waits, 1);
  ASSERT_EQ(events_.events(CacheEvent::Kind::kWaitedForRoom).size(), 1u);
  EXPECT_TRUE(events_.events(CacheEvent::Kind::kWaitedForRoom)[0].status.ok());
}

TEST_F(RoomWaitTest, TheLineIsFirstInFirstOutEvenForRequestsThatWouldFit) {
  absl::StatusOr<Reservation> held = cache_->make_room(700, Device::kCpu);
  ASSERT_THAT(held, IsOk());
  std::future<absl::StatusOr<Reservation>> large = wait_for(600);
  await_line(1);
  // 300 are free, but the large request came first.
  std::future<absl::StatusOr<Reservation>> small = wait_for(100);
  await_line(2);
  EXPECT_EQ(small.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  held->shrink_to(0);
  absl::StatusOr<Reservation> first = large.get();
  absl::StatusOr<Reservation> second = small.get();
  ASSERT_THAT(first, IsOk());
  ASSERT_THAT(second, IsOk());
  EXPECT_EQ(ram_.snapshot().reserved_bytes, 700);
}

TEST_F(RoomWaitTest, ARequestThatCouldNeverFitIsRefusedAtOnce) {
  EXPECT_THAT(cache_->make_room(1001, Device::kCpu, nullptr, RoomWait{true, {}}),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("needed 1001 bytes")));
  EXPECT_EQ(cache_->stats().room_waits, 0);
}

TEST_F(RoomWaitTest, MemoryLeasesHoldIsNotWaitedFor) {
  const Loader loader = [this]() -> absl::StatusOr<LoadedValue> {
    absl::StatusOr<Reservation> r = cache_->make_room(600, Device::kCpu);
    if (!r.ok()) return r.status();
    if (absl::Status s = r->charge(600); !s.ok()) return s;
    LoadedValue loaded;
    loaded.value = std::make_unique<CacheValue>();
    loaded.reservations.push_back(std::move(*r));
    return loaded;
  };
  ASSERT_THAT(cache_->get_or_load("leased", loader), IsOk());
  ASSERT_THAT(cache_->acquire_lease("leased", absl::Minutes(10)), IsOk());
  EXPECT_THAT(cache_->make_room(500, Device::kCpu, nullptr, RoomWait{true, {}}),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("leases hold 600 bytes")));
  EXPECT_EQ(cache_->stats().room_waits, 0);
}

TEST_F(RoomWaitTest, AWaitEndsAtTheMaximumWaitOnTheClock) {
  absl::StatusOr<Reservation> held = cache_->make_room(700, Device::kCpu);
  ASSERT_THAT(held, IsOk());
  std::future<absl::StatusOr<Reservation>> waiting = wait_for(500);
  await_line(1);
  clock_.advance(absl::Seconds(61));
  EXPECT_THAT(waiting.get(), StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("after waiting 1m")));
  EXPECT_EQ(cache_->stats().room_waiting, 0);
  ASSERT_EQ(events_.events(CacheEvent::Kind::kWaitedForRoom).size(), 1u);
  EXPECT_FALSE(events_.events(CacheEvent::Kind::kWaitedForRoom)[0].status.ok());
  EXPECT_EQ(ram_.snapshot().reserved_bytes, 700);
}

TEST_F(RoomWaitTest, ACancelledWaitStopsWithTheReason) {
  absl::StatusOr<Reservation> held = cache_->make_room(700, Device::kCpu);
  ASSERT_THAT(held, IsOk());
  CancellationSource caller;
  std::future<absl::StatusOr<Reservation>> waiting = wait_for(500, caller.token());
  await_line(1);
  caller.cancel(absl::CancelledError("the client went away"));
  EXPECT_THAT(waiting.get(), StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("stopped waiting after")));
  EXPECT_EQ(cache_->stats().room_waiting, 0);
}

TEST_F(RoomWaitTest, ACallerThatDoesNotWaitIsRefusedAtOnceAsBefore) {
  absl::StatusOr<Reservation> held = cache_->make_room(700, Device::kCpu);
  ASSERT_THAT(held, IsOk());
  EXPECT_THAT(cache_->make_room(500, Device::kCpu),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("reserved by work in flight 700 bytes")));
  EXPECT_EQ(cache_->stats().room_waits, 0);
}

}  // namespace
}  // namespace diffusiond
