// Accounting invariants of ModelCache under concurrent random traffic:
// loads (some failing), pins, leases, direct reservations, evictions and
// unloads. Built and run under TSan by the CI's sanitizer job as well.
#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "core/cache/model_cache.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

constexpr int64_t kCapacity = 10'000;
constexpr int kThreads = 8;
constexpr int kKeys = 12;
constexpr absl::Duration kRunFor = absl::Seconds(3);

// Bytes "resident" in values: what eviction must really free.
std::atomic<int64_t> g_resident{0};
std::atomic<int64_t> g_resident_peak{0};

class CountedValue : public CacheValue {
 public:
  explicit CountedValue(int64_t bytes) : bytes_(bytes) {
    const int64_t now = g_resident += bytes_;
    int64_t peak = g_resident_peak.load();
    while (now > peak && !g_resident_peak.compare_exchange_weak(peak, now)) {
    }
  }
  ~CountedValue() override { g_resident -= bytes_; }

 private:
  const int64_t bytes_;
};

Loader random_loader(ModelCache* cache, std::mt19937* rng) {
  std::uniform_int_distribution<int64_t> size(200, 3'000);
  const int64_t reserve = size(*rng);
  const int64_t hold = reserve * std::uniform_int_distribution<int>(50, 100)(*rng) / 100;
  const bool fail = std::uniform_int_distribution<int>(0, 9)(*rng) == 0;
  return [cache, reserve, hold, fail]() -> absl::StatusOr<LoadedValue> {
    absl::StatusOr<Reservation> r = cache->make_room(reserve, Device::kCpu);
    if (!r.ok()) return r.status();
    if (absl::Status s = r->charge(hold); !s.ok()) return s;
    if (fail) return absl::DataLossError("injected failure");
    LoadedValue loaded;
    loaded.value = std::make_unique<CountedValue>(hold);
    loaded.reservations.push_back(std::move(*r));
    return loaded;
  };
}

void check_invariants(ModelCache* cache) {
  const CacheStats s = cache->stats();
  const BudgetSnapshot& b = s.budgets[0];
  ASSERT_LE(b.reserved_bytes + b.committed_bytes, b.capacity_bytes);
  ASSERT_GE(b.reserved_bytes, 0);
  int64_t entry_bytes = 0;
  for (const CacheEntryStats& e : s.entries) entry_bytes += e.bytes[0];
  ASSERT_EQ(entry_bytes, b.committed_bytes);  // stats are taken atomically
  ASSERT_LE(b.high_water_bytes, b.capacity_bytes);
}

void worker(ModelCache* cache, int seed, std::atomic<int64_t>* ops) {
  std::mt19937 rng(seed);
  std::vector<Pin> pins;
  std::vector<LeaseId> leases;
  const absl::Time stop = absl::Now() + kRunFor;
  while (absl::Now() < stop) {
    const std::string key = "m" + std::to_string(std::uniform_int_distribution<int>(0, kKeys - 1)(rng));
    switch (std::uniform_int_distribution<int>(0, 9)(rng)) {
      case 0:
      case 1:
      case 2: {
        absl::StatusOr<Pin> pin = cache->get_or_load(key, random_loader(cache, &rng));
        if (pin.ok() && pins.size() < 2) pins.push_back(std::move(*pin));
        break;
      }
      case 3:
        if (!pins.empty()) pins.erase(pins.begin());
        break;
      case 4: {
        absl::StatusOr<LeaseId> lease = cache->acquire_lease(key, absl::Milliseconds(5));
        if (lease.ok()) leases.push_back(*lease);
        break;
      }
      case 5:
        if (!leases.empty()) {
          (void)cache->release_lease(leases.back());  // may have expired
          leases.pop_back();
        }
        break;
      case 6: {
        // A reservation not tied to an entry, e.g. activation workspace.
        absl::StatusOr<Reservation> r = cache->make_room(500, Device::kCpu);
        if (r.ok()) {
          ASSERT_LE(r->reserved_bytes(), kCapacity);
        }
        break;
      }
      case 7: {
        UnloadOptions options;
        options.wait = std::uniform_int_distribution<int>(0, 1)(rng) == 0;
        options.timeout = absl::Milliseconds(2);
        (void)cache->unload(key, options);
        break;
      }
      case 8:
        cache->expire_leases();
        break;
      default:
        check_invariants(cache);
        break;
    }
    ++*ops;
  }
  pins.clear();
  for (LeaseId l : leases) (void)cache->release_lease(l);
}

TEST(ModelCacheStress, AccountingHoldsUnderConcurrentTraffic) {
  Budget ram(Device::kCpu, kCapacity);
  ModelCacheOptions options;
  options.ram_budget = &ram;
  options.trim_heap_after_eviction = false;  // keeps the run about the cache
  absl::StatusOr<std::unique_ptr<ModelCache>> cache = ModelCache::create(options);
  ASSERT_THAT(cache, testing::IsOk());

  std::atomic<int64_t> ops{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back(worker, cache->get(), 1234 + i, &ops);
  for (std::thread& t : threads) t.join();

  check_invariants(cache->get());
  EXPECT_LE(g_resident_peak.load(), kCapacity);
  const CacheStats s = (*cache)->stats();
  EXPECT_GT(s.misses, 0);
  EXPECT_GT(s.evictions + s.unloads, 0);
  for (const CacheEntryStats& e : s.entries) {
    EXPECT_EQ(e.pins, 0) << e.key;
    ASSERT_THAT((*cache)->unload(e.key), testing::IsOk());
  }
  EXPECT_EQ(ram.snapshot().reserved_bytes, 0);
  EXPECT_EQ(ram.snapshot().committed_bytes, 0);
  EXPECT_EQ(g_resident.load(), 0);
  std::printf("stress: %lld operations, %lld loads, %lld evictions, %lld unloads, %lld rejections\n",
              static_cast<long long>(ops.load()), static_cast<long long>(s.misses),
              static_cast<long long>(s.evictions), static_cast<long long>(s.unloads),
              static_cast<long long>(s.rejections));
}

}  // namespace
}  // namespace diffusiond
