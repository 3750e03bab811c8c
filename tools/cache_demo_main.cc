// diffusiond-cache-demo: walks the memory-budget core through a serving
// session with stand-in models (random libtorch tensors), printing what the
// cache decides and what the process's RSS does at each step.
//
//   diffusiond-cache-demo [--budget_mib N] [--model_mib N]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "core/cache/model_cache.h"
#include "core/memory/allocator.h"
#include "core/memory/default_budget.h"
#include "core/memory/process_memory.h"
#include "core/util/bytes.h"

namespace diffusiond {
namespace {

class StandInModel : public CacheValue {
 public:
  std::vector<torch::Tensor> weights;
};

class PrintingObserver : public CacheObserver {
 public:
  void on_cache_event(const CacheEvent& e) override {
    static constexpr const char* kKinds[] = {"loaded", "load_failed", "evicted",
                                             "unloaded", "rejected"};
    std::printf("  event=%s model=%s bytes=%lld\n", kKinds[static_cast<int>(e.kind)],
                e.key.empty() ? "-" : e.key.c_str(), static_cast<long long>(e.bytes[0]));
  }
};

std::string rss() {
  absl::StatusOr<ProcessMemory> m = read_process_memory();
  return m.ok() ? format_bytes(m->rss_bytes) : std::string(m.status().message());
}

Loader stand_in_loader(ModelCache* cache, int64_t bytes) {
  return [cache, bytes]() -> absl::StatusOr<LoadedValue> {
    absl::StatusOr<Reservation> r = cache->make_room(bytes, Device::kCpu);
    if (!r.ok()) return r.status();
    auto model = std::make_unique<StandInModel>();
    constexpr int64_t kTensorBytes = 16 * kMiB;
    for (int64_t left = bytes; left > 0; left -= kTensorBytes) {
      const int64_t n = std::min(left, kTensorBytes);
      if (absl::Status s = r->charge(n); !s.ok()) return s;
      model->weights.push_back(torch::randn({n / 4}, torch::kFloat32));
    }
    LoadedValue loaded;
    loaded.value = std::move(model);
    loaded.reservations.push_back(std::move(*r));
    return loaded;
  };
}

void print_stats(const ModelCache& cache) {
  const CacheStats s = cache.stats();
  const BudgetSnapshot& b = s.budgets[0];
  std::printf("  budget %s: committed %s, reserved %s, available %s | RSS %s\n",
              format_bytes(b.capacity_bytes).c_str(), format_bytes(b.committed_bytes).c_str(),
              format_bytes(b.reserved_bytes).c_str(), format_bytes(b.available_bytes()).c_str(),
              rss().c_str());
  for (const CacheEntryStats& e : s.entries) {
    std::printf("    %-10s %s pins=%d\n", e.key.c_str(), format_bytes(e.bytes[0]).c_str(),
                e.pins);
  }
}

int64_t flag_mib(int argc, char** argv, const char* name, int64_t fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    int64_t v = 0;
    if (std::strcmp(argv[i], name) == 0 && absl::SimpleAtoi(argv[i + 1], &v) && v > 0) {
      return v * kMiB;
    }
  }
  return fallback;
}

int run(int argc, char** argv) {
  tune_allocator_for_serving();
  absl::StatusOr<MachineMemory> machine = probe_machine_memory();
  if (!machine.ok()) {
    std::fprintf(stderr, "error: %s\n", machine.status().ToString().c_str());
    return 1;
  }
  std::printf("machine: MemTotal %s, cgroup limit %s\n",
              format_bytes(machine->mem_total_bytes).c_str(),
              machine->cgroup_limit_bytes ? format_bytes(*machine->cgroup_limit_bytes).c_str()
                                          : "none");
  std::printf("default RAM budget (0.85 x usable - 512 MiB): %s\n",
              format_bytes(default_ram_budget_bytes(*machine)).c_str());

  const int64_t budget_bytes = flag_mib(argc, argv, "--budget_mib", 1024 * kMiB);
  const int64_t model_bytes = flag_mib(argc, argv, "--model_mib", 384 * kMiB);
  std::printf("demo budget %s, stand-in models of %s each; RSS now %s\n\n",
              format_bytes(budget_bytes).c_str(), format_bytes(model_bytes).c_str(),
              rss().c_str());

  Budget ram(Device::kCpu, budget_bytes);
  PrintingObserver observer;
  ModelCacheOptions options;
  options.ram_budget = &ram;
  options.observer = &observer;
  absl::StatusOr<std::unique_ptr<ModelCache>> created = ModelCache::create(options);
  if (!created.ok()) return 1;
  ModelCache& cache = **created;

  std::printf("1. load 'base' and keep it pinned (a denoise in flight)\n");
  absl::StatusOr<Pin> base = cache.get_or_load("base", stand_in_loader(&cache, model_bytes));
  if (!base.ok()) return 1;
  print_stats(cache);

  std::printf("2. load 'refiner', then 'upscaler': the second evicts the LRU unpinned model\n");
  for (const char* key : {"refiner", "upscaler"}) {
    absl::StatusOr<Pin> pin = cache.get_or_load(key, stand_in_loader(&cache, model_bytes));
    if (!pin.ok()) std::printf("  %s\n", pin.status().ToString().c_str());
  }
  print_stats(cache);

  std::printf("3. ask for a model larger than what pins allow: refused, nothing evicted\n");
  absl::StatusOr<Pin> huge =
      cache.get_or_load("huge", stand_in_loader(&cache, budget_bytes - model_bytes / 2));
  std::printf("  %s\n", huge.status().ToString().c_str());
  print_stats(cache);

  std::printf("4. release the pin and unload everything: RSS follows\n");
  base->reset();
  for (const CacheEntryStats& e : cache.stats().entries) {
    absl::StatusOr<UnloadResult> r = cache.unload(e.key);
    if (r.ok()) std::printf("  unloaded %s: freed %s\n", e.key.c_str(),
                            format_bytes(r->freed_bytes[0]).c_str());
  }
  print_stats(cache);
  const CacheStats s = cache.stats();
  std::printf("\nhits %lld, misses %lld, evictions %lld, rejections %lld, high water %s\n",
              static_cast<long long>(s.hits), static_cast<long long>(s.misses),
              static_cast<long long>(s.evictions), static_cast<long long>(s.rejections),
              format_bytes(s.budgets[0].high_water_bytes).c_str());
  return 0;
}

}  // namespace
}  // namespace diffusiond

int main(int argc, char** argv) { return diffusiond::run(argc, argv); }
