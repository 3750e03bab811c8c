// Costs of the cache's bookkeeping, which every Step and Denoise request
// pays: a hit (pin + unpin), and make_room with and without eviction.
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "core/cache/model_cache.h"

namespace diffusiond {
namespace {

class Empty : public CacheValue {};

std::unique_ptr<ModelCache> make_cache(Budget* ram) {
  ModelCacheOptions options;
  options.ram_budget = ram;
  options.trim_heap_after_eviction = false;
  absl::StatusOr<std::unique_ptr<ModelCache>> cache = ModelCache::create(options);
  return cache.ok() ? std::move(*cache) : nullptr;
}

Loader loader_of(ModelCache* cache, int64_t bytes) {
  return [cache, bytes]() -> absl::StatusOr<LoadedValue> {
    absl::StatusOr<Reservation> r = cache->make_room(bytes, Device::kCpu);
    if (!r.ok()) return r.status();
    if (absl::Status s = r->charge(bytes); !s.ok()) return s;
    LoadedValue loaded;
    loaded.value = std::make_unique<Empty>();
    loaded.reservations.push_back(std::move(*r));
    return loaded;
  };
}

// A Step's overhead: look the model up, pin it, unpin it. Threads contend.
void BM_HitPinUnpin(benchmark::State& state) {
  static Budget* ram = new Budget(Device::kCpu, 1 << 30);
  static std::unique_ptr<ModelCache>* cache = nullptr;
  if (state.thread_index() == 0 && cache == nullptr) {
    cache = new std::unique_ptr<ModelCache>(make_cache(ram));
    for (int i = 0; i < 16; ++i) {
      (void)(*cache)->get_or_load("m" + std::to_string(i), loader_of(cache->get(), 1024));
    }
  }
  const Loader unused = loader_of(nullptr, 0);
  for (auto _ : state) {
    absl::StatusOr<Pin> pin = (*cache)->get_or_load("m7", unused);
    benchmark::DoNotOptimize(pin.ok());
  }
}
BENCHMARK(BM_HitPinUnpin)->Threads(1)->Threads(2)->Threads(8);

// Admission that must evict one LRU entry out of `range(0)` to fit.
void BM_MakeRoomWithEviction(benchmark::State& state) {
  const int entries = static_cast<int>(state.range(0));
  Budget ram(Device::kCpu, int64_t{entries} * 1024);
  std::unique_ptr<ModelCache> cache = make_cache(&ram);
  for (int i = 0; i < entries; ++i) {
    (void)cache->get_or_load("m" + std::to_string(i), loader_of(cache.get(), 1024));
  }
  int next = entries;
  for (auto _ : state) {
    absl::StatusOr<Pin> pin =
        cache->get_or_load("m" + std::to_string(next++), loader_of(cache.get(), 1024));
    benchmark::DoNotOptimize(pin.ok());
  }
}
BENCHMARK(BM_MakeRoomWithEviction)->Arg(4)->Arg(64)->Arg(512);

}  // namespace
}  // namespace diffusiond
