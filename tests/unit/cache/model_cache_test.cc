#include "core/cache/model_cache.h"

#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/recording_observer.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::FakeClock;
using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::RecordingObserver;
using ::diffusiond::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Stands in for a model: counts live instances so tests see eviction free it.
class FakeModel : public CacheValue {
 public:
  explicit FakeModel(std::atomic<int>* live) : live_(live) { ++*live_; }
  ~FakeModel() override { --*live_; }

 private:
  std::atomic<int>* live_;
};

class ModelCacheTest : public ::testing::Test {
 protected:
  ModelCacheTest() : ram_(Device::kCpu, 1000) {
    ModelCacheOptions options;
    options.ram_budget = &ram_;
    options.clock = &clock_;
    options.observer = &observer_;
    absl::StatusOr<std::unique_ptr<ModelCache>> cache = ModelCache::create(options);
    EXPECT_THAT(cache, IsOk());
    cache_ = std::move(*cache);
  }

  // A loader that reserves `bytes` through make_room and holds all of them.
  Loader loader_of(int64_t bytes) {
    return [this, bytes]() -> absl::StatusOr<LoadedValue> {
      absl::StatusOr<Reservation> r = cache_->make_room(bytes, Device::kCpu);
      if (!r.ok()) return r.status();
      if (absl::Status s = r->charge(bytes); !s.ok()) return s;
      LoadedValue loaded;
      loaded.value = std::make_unique<FakeModel>(&live_);
      loaded.reservations.push_back(std::move(*r));
      return loaded;
    };
  }

  // Loads `key` and drops the pin at once.
  void load(const std::string& key, int64_t bytes) {
    ASSERT_THAT(cache_->get_or_load(key, loader_of(bytes)), IsOk());
  }

  std::vector<std::string> keys() {
    std::vector<std::string> out;
    for (const CacheEntryStats& e : cache_->stats().entries) out.push_back(e.key);
    return out;
  }

  Budget ram_;
  FakeClock clock_;
  RecordingObserver observer_;
  std::atomic<int> live_{0};
  std::unique_ptr<ModelCache> cache_;
};

TEST_F(ModelCacheTest, LoadCommitsChargeAndPinsTheEntry) {
  absl::StatusOr<Pin> pin = cache_->get_or_load("a", loader_of(300));
  ASSERT_THAT(pin, IsOk());
  EXPECT_EQ(pin->key(), "a");
  EXPECT_NE(pin->as<FakeModel>(), nullptr);
  const CacheStats s = cache_->stats();
  EXPECT_EQ(s.budgets[0].committed_bytes, 300);
  EXPECT_EQ(s.budgets[0].reserved_bytes, 0);
  ASSERT_EQ(s.entries.size(), 1u);
  EXPECT_EQ(s.entries[0].pins, 1);
  EXPECT_EQ(s.entries[0].bytes[0], 300);
  EXPECT_EQ(s.misses, 1);
}

TEST_F(ModelCacheTest, HitPinsWithoutRunningTheLoader) {
  load("a", 300);
  bool ran = false;
  absl::StatusOr<Pin> pin = cache_->get_or_load("a", [&]() -> absl::StatusOr<LoadedValue> {
    ran = true;
    return absl::InternalError("must not run");
  });
  ASSERT_THAT(pin, IsOk());
  EXPECT_FALSE(ran);
  EXPECT_EQ(cache_->stats().hits, 1);
}

TEST_F(ModelCacheTest, EvictsLeastRecentlyUsedFirst) {
  load("a", 300);
  load("b", 300);
  load("c", 300);
  ASSERT_THAT(cache_->get("a"), IsOk());  // a is now the most recent
  load("d", 300);                          // needs one eviction: b
  EXPECT_THAT(keys(), ElementsAre("d", "a", "c"));
  load("e", 600);                          // needs two more: c, then a
  EXPECT_THAT(keys(), ElementsAre("e", "d"));
  EXPECT_EQ(live_.load(), 2);  // evicted values were destroyed
  EXPECT_EQ(cache_->stats().evictions, 3);
  EXPECT_EQ(ram_.snapshot().committed_bytes, 900);
}

TEST_F(ModelCacheTest, PeekReadsWithoutPinningOrReorderingEviction) {
  load("a", 300);
  load("b", 300);
  int reads = 0;
  EXPECT_TRUE(cache_->peek("a", [&](const CacheValue& v) {
    EXPECT_NE(dynamic_cast<const FakeModel*>(&v), nullptr);
    ++reads;
  }));
  EXPECT_EQ(reads, 1);
  EXPECT_FALSE(cache_->peek("missing", [&](const CacheValue&) { ++reads; }));
  EXPECT_EQ(reads, 1);
  EXPECT_EQ(cache_->stats().entries[1].pins, 0);
  EXPECT_EQ(cache_->stats().hits, 0);
  load("c", 600);  // "a" is still the least recently used, so it goes first
  EXPECT_THAT(keys(), ElementsAre("c", "b"));
}

TEST_F(ModelCacheTest, ClaimHandsOneSlotAndWaitersShareItsResult) {
  absl::StatusOr<Claim> first = cache_->claim("a");
  ASSERT_THAT(first, IsOk());
  ASSERT_TRUE(std::holds_alternative<LoadSlot>(*first));
  std::thread waiter([&] {
    absl::StatusOr<Claim> second = cache_->claim("a");  // blocks until the slot is finished
    ASSERT_THAT(second, IsOk());
    EXPECT_TRUE(std::holds_alternative<Pin>(*second));
  });
  // The load runs with no cache call on the stack: reserve, charge, finish.
  absl::StatusOr<Reservation> r = cache_->make_room(300, Device::kCpu);
  ASSERT_THAT(r, IsOk());
  ASSERT_THAT(r->charge(300), IsOk());
  LoadedValue loaded;
  loaded.value = std::make_unique<FakeModel>(&live_);
  loaded.reservations.push_back(*std::move(r));
  absl::StatusOr<Pin> pin = std::get<LoadSlot>(*first).finish(std::move(loaded));
  ASSERT_THAT(pin, IsOk());
  waiter.join();
  EXPECT_EQ(ram_.snapshot().committed_bytes, 300);
  EXPECT_EQ(cache_->stats().misses, 1);
}

TEST_F(ModelCacheTest, AnAbandonedSlotCancelsItsWaitersAndLeavesNothing) {
  std::optional<absl::StatusOr<Claim>> first = cache_->claim("a");
  ASSERT_THAT(*first, IsOk());
  std::thread waiter([&] {
    // Blocked on the loading entry, it shares the abandonment; a waiter that
    // arrives after it gets the duty to load instead (and drops it too).
    absl::StatusOr<Claim> second = cache_->claim("a");
    if (!second.ok()) {
      EXPECT_THAT(second, StatusIs(absl::StatusCode::kCancelled, HasSubstr("abandoned")));
    } else {
      EXPECT_TRUE(std::holds_alternative<LoadSlot>(*second));
    }
  });
  first.reset();  // the slot dies unfinished
  waiter.join();
  EXPECT_GE(cache_->stats().failed_loads, 1);
  EXPECT_TRUE(keys().empty());
  EXPECT_EQ(ram_.snapshot().reserved_bytes, 0);
  load("a", 100);  // the key can be loaded again
}

TEST_F(ModelCacheTest, PinnedEntriesAreNotEvicted) {
  absl::StatusOr<Pin> a = cache_->get_or_load("a", loader_of(400));
  ASSERT_THAT(a, IsOk());
  load("b", 400);
  load("c", 500);  // b must go, a is pinned
  EXPECT_THAT(keys(), ElementsAre("c", "a"));
}

TEST_F(ModelCacheTest, RefusedMakeRoomEvictsNothingAndSaysWhy) {
  absl::StatusOr<Pin> a = cache_->get_or_load("a", loader_of(500));
  ASSERT_THAT(a, IsOk());
  load("b", 300);
  const int live_before = live_.load();
  EXPECT_THAT(cache_->make_room(600, Device::kCpu),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("needed 600 bytes, available 200 bytes, evictable 300 bytes")));
  EXPECT_THAT(keys(), ElementsAre("b", "a"));
  EXPECT_EQ(live_.load(), live_before);
  EXPECT_EQ(ram_.snapshot().committed_bytes, 800);
  EXPECT_EQ(cache_->stats().rejections, 1);
  const std::vector<CacheEvent> events = observer_.events();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().kind, CacheEvent::Kind::kRejected);
  EXPECT_EQ(events.back().bytes[0], 600);
}

TEST_F(ModelCacheTest, MakeRoomForMissingDeviceIsFailedPrecondition) {
  EXPECT_THAT(cache_->make_room(1, Device::kCuda),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("no cuda budget")));
}

TEST_F(ModelCacheTest, FailedLoadReleasesItsReservation) {
  absl::StatusOr<Pin> pin = cache_->get_or_load("bad", [this]() -> absl::StatusOr<LoadedValue> {
    absl::StatusOr<Reservation> r = cache_->make_room(700, Device::kCpu);
    if (!r.ok()) return r.status();
    if (absl::Status s = r->charge(500); !s.ok()) return s;
    return absl::DataLossError("bad.safetensors: truncated");
  });
  EXPECT_THAT(pin, StatusIs(absl::StatusCode::kDataLoss, HasSubstr("truncated")));
  const BudgetSnapshot s = ram_.snapshot();
  EXPECT_EQ(s.reserved_bytes, 0);
  EXPECT_EQ(s.committed_bytes, 0);
  EXPECT_TRUE(keys().empty());
  EXPECT_EQ(cache_->stats().failed_loads, 1);
}

TEST_F(ModelCacheTest, ThrowingLoaderIsAnInternalErrorAndLeavesNothing) {
  absl::StatusOr<Pin> pin = cache_->get_or_load("boom", []() -> absl::StatusOr<LoadedValue> {
    throw std::runtime_error("c10::Error stand-in");
  });
  EXPECT_THAT(pin, StatusIs(absl::StatusCode::kInternal, HasSubstr("c10::Error stand-in")));
  EXPECT_TRUE(keys().empty());
  load("boom", 100);  // the key can be loaded again
}

TEST_F(ModelCacheTest, SingleFlightRunsTheLoaderOnceForConcurrentCallers) {
  std::atomic<int> runs{0};
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  Loader slow = [&]() -> absl::StatusOr<LoadedValue> {
    ++runs;
    released.wait();
    return loader_of(200)();
  };
  constexpr int kCallers = 8;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < kCallers; ++i) {
    threads.emplace_back([&] {
      absl::StatusOr<Pin> pin = cache_->get_or_load("shared", slow);
      if (pin.ok()) ++ok;
    });
  }
  // Wait until the loader has started before letting it finish.
  while (runs.load() == 0) std::this_thread::yield();
  release.set_value();
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(runs.load(), 1);
  EXPECT_EQ(ok.load(), kCallers);
  const CacheStats s = cache_->stats();
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.hits, kCallers - 1);
  EXPECT_EQ(s.budgets[0].committed_bytes, 200);
}

TEST_F(ModelCacheTest, SingleFlightSharesAFailure) {
  std::atomic<int> runs{0};
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  Loader failing = [&]() -> absl::StatusOr<LoadedValue> {
    ++runs;
    released.wait();
    return absl::NotFoundError("missing.safetensors");
  };
  std::vector<std::thread> threads;
  std::atomic<int> not_found{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      if (absl::IsNotFound(cache_->get_or_load("x", failing).status())) ++not_found;
    });
  }
  while (runs.load() == 0) std::this_thread::yield();
  release.set_value();
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(not_found.load(), 4);
  EXPECT_LE(runs.load(), 4);  // a late caller may retry after the failure
  EXPECT_EQ(ram_.snapshot().reserved_bytes, 0);
}

TEST_F(ModelCacheTest, LeaseKeepsTheEntryUntilItExpires) {
  load("a", 600);
  absl::StatusOr<LeaseId> lease = cache_->acquire_lease("a", absl::Seconds(30));
  ASSERT_THAT(lease, IsOk());
  EXPECT_THAT(cache_->make_room(500, Device::kCpu),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("evictable 0 bytes")));
  clock_.advance(absl::Seconds(29));
  ASSERT_THAT(cache_->renew_lease(*lease, absl::Seconds(30)), IsOk());
  clock_.advance(absl::Seconds(29));
  EXPECT_EQ(cache_->expire_leases(), 0);
  clock_.advance(absl::Seconds(2));
  ASSERT_THAT(cache_->make_room(500, Device::kCpu), IsOk());  // expires, then evicts
  EXPECT_TRUE(keys().empty());
  EXPECT_EQ(cache_->stats().leases_expired, 1);
  EXPECT_THAT(cache_->release_lease(*lease),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("unknown or expired")));
}

TEST_F(ModelCacheTest, LeaseErrors) {
  EXPECT_THAT(cache_->acquire_lease("nope", absl::Seconds(1)),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("'nope' is not loaded")));
  load("a", 100);
  EXPECT_THAT(cache_->acquire_lease("a", absl::ZeroDuration()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be positive")));
  absl::StatusOr<LeaseId> lease = cache_->acquire_lease("a", absl::Seconds(5));
  ASSERT_THAT(lease, IsOk());
  ASSERT_THAT(cache_->release_lease(*lease), IsOk());
  EXPECT_EQ(cache_->stats().entries[0].pins, 0);
}

TEST_F(ModelCacheTest, UnloadFreesMemoryAndReportsBytes) {
  load("a", 300);
  absl::StatusOr<UnloadResult> r = cache_->unload("a");
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->freed_bytes[0], 300);
  EXPECT_EQ(live_.load(), 0);
  EXPECT_EQ(ram_.snapshot().committed_bytes, 0);
  EXPECT_THAT(cache_->unload("a"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("'a' is not loaded")));
}

TEST_F(ModelCacheTest, UnloadWithoutWaitRefusesAPinnedEntry) {
  absl::StatusOr<Pin> pin = cache_->get_or_load("a", loader_of(300));
  ASSERT_THAT(pin, IsOk());
  UnloadOptions no_wait;
  no_wait.wait = false;
  EXPECT_THAT(cache_->unload("a", no_wait),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("in use: 1 pins")));
  EXPECT_EQ(live_.load(), 1);
}

TEST_F(ModelCacheTest, UnloadWaitsForPinsToDrain) {
  absl::StatusOr<Pin> pin = cache_->get_or_load("a", loader_of(300));
  ASSERT_THAT(pin, IsOk());
  absl::StatusOr<UnloadResult> result;
  std::thread unloader([&] { result = cache_->unload("a"); });
  // Until the pin goes, the entry is draining and refuses new users.
  while (cache_->stats().entries.empty() || !cache_->stats().entries[0].draining) {
    std::this_thread::yield();
  }
  EXPECT_THAT(cache_->get_or_load("a", loader_of(300)),
              StatusIs(absl::StatusCode::kAborted, HasSubstr("being unloaded")));
  pin->reset();
  unloader.join();
  ASSERT_THAT(result, IsOk());
  EXPECT_EQ(result->freed_bytes[0], 300);
  EXPECT_EQ(live_.load(), 0);
}

TEST_F(ModelCacheTest, UnloadTimeoutOnTheClockLeavesTheEntryLoaded) {
  absl::StatusOr<Pin> pin = cache_->get_or_load("a", loader_of(300));
  ASSERT_THAT(pin, IsOk());
  UnloadOptions brief;
  brief.timeout = absl::Seconds(5);
  absl::StatusOr<UnloadResult> result;
  std::thread unloader([&] { result = cache_->unload("a", brief); });
  ASSERT_TRUE(clock_.await_waiters(1));
  clock_.advance(absl::Seconds(5));
  unloader.join();
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("still has 1 pins")));
  ASSERT_THAT(cache_->get("a"), IsOk());
}

TEST_F(ModelCacheTest, ACancelledUnloadWakesAtOnceAndLeavesTheEntryLoaded) {
  absl::StatusOr<Pin> pin = cache_->get_or_load("a", loader_of(300));
  ASSERT_THAT(pin, IsOk());
  CancellationSource caller;
  UnloadOptions options;
  options.cancel = caller.token();
  absl::StatusOr<UnloadResult> result;
  std::thread unloader([&] { result = cache_->unload("a", options); });
  ASSERT_TRUE(clock_.await_waiters(1));
  caller.cancel(absl::CancelledError("the caller gave up"));
  unloader.join();  // the clock never moved
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kCancelled, HasSubstr("the caller gave up")));
  ASSERT_THAT(cache_->get("a"), IsOk());
}

TEST_F(ModelCacheTest, AnUnloadWaitingOnALeaseEndsWhenItExpiresOnTheClock) {
  ASSERT_THAT(cache_->get_or_load("a", loader_of(300)), IsOk());
  ASSERT_THAT(cache_->acquire_lease("a", absl::Seconds(30)), IsOk());
  absl::StatusOr<UnloadResult> result;
  std::thread unloader([&] { result = cache_->unload("a"); });
  ASSERT_TRUE(clock_.await_waiters(1));
  clock_.advance(absl::Seconds(30));
  unloader.join();
  ASSERT_THAT(result, IsOk());
  EXPECT_EQ(result->freed_bytes[0], 300);
}

TEST_F(ModelCacheTest, StatsReportIdleAgeFromTheInjectedClock) {
  load("a", 100);
  clock_.advance(absl::Seconds(42));
  const CacheStats s = cache_->stats();
  ASSERT_EQ(s.entries.size(), 1u);
  EXPECT_EQ(s.entries[0].idle_age, absl::Seconds(42));
}

TEST_F(ModelCacheTest, ObserverSeesLoadEvictUnload) {
  load("a", 600);
  load("b", 600);  // evicts a
  ASSERT_THAT(cache_->unload("b"), IsOk());
  std::vector<CacheEvent::Kind> kinds;
  for (const CacheEvent& e : observer_.events()) kinds.push_back(e.kind);
  EXPECT_THAT(kinds, ElementsAre(CacheEvent::Kind::kLoaded, CacheEvent::Kind::kEvicted,
                                 CacheEvent::Kind::kLoaded, CacheEvent::Kind::kUnloaded));
}

TEST_F(ModelCacheTest, AnEvictionSaysWhy) {
  load("a", 600);
  load("b", 600);  // evicts a to make room for b's 600 bytes
  const std::vector<CacheEvent> evicted = observer_.events(CacheEvent::Kind::kEvicted);
  ASSERT_EQ(evicted.size(), 1u);
  EXPECT_EQ(evicted[0].key, "a");
  EXPECT_EQ(evicted[0].device, Device::kCpu);
  EXPECT_THAT(evicted[0].reason, HasSubstr("least recently used"));
  EXPECT_THAT(evicted[0].reason, HasSubstr("600 bytes on cpu"));
}

TEST(ModelCacheCreate, RequiresARamBudgetOfTheRightDevice) {
  EXPECT_THAT(ModelCache::create({}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("needs a RAM budget")));
  Budget wrong(Device::kCuda, 10);
  ModelCacheOptions options;
  options.ram_budget = &wrong;
  EXPECT_THAT(ModelCache::create(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected 'cpu'")));
}

}  // namespace
}  // namespace diffusiond
