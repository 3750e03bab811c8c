// Child process for eviction_rss_test: loads a few hundred MiB of libtorch
// tensors into cache entries, evicts them, and prints RSS at each stage as
// "stage=<name> rss_bytes=<n>" lines. Runs alone so the RSS is its own.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "core/cache/model_cache.h"
#include "core/memory/allocator.h"
#include "core/memory/process_memory.h"
#include "core/util/bytes.h"

namespace diffusiond {
namespace {

class TensorModel : public CacheValue {
 public:
  std::vector<torch::Tensor> weights;
};

int print_rss(const char* stage) {
  absl::StatusOr<ProcessMemory> m = read_process_memory();
  if (!m.ok()) {
    std::fprintf(stderr, "%s\n", m.status().ToString().c_str());
    return 1;
  }
  std::printf("stage=%s rss_bytes=%lld\n", stage, static_cast<long long>(m->rss_bytes));
  return 0;
}

int run() {
  tune_allocator_for_serving();
  constexpr int kModels = 4;
  constexpr int64_t kTensorsPerModel = 8;
  // Tensors from the heap (torch::randn), not the loader's own mappings:
  // what eviction must return is whatever the allocator keeps of them.
  constexpr int64_t kTensorBytes = 10 * kMiB;
  Budget ram(Device::kCpu, kModels * kTensorsPerModel * kTensorBytes);
  ModelCacheOptions options;
  options.ram_budget = &ram;
  absl::StatusOr<std::unique_ptr<ModelCache>> cache = ModelCache::create(options);
  if (!cache.ok()) return 1;
  if (print_rss("before") != 0) return 1;
  for (int i = 0; i < kModels; ++i) {
    absl::StatusOr<Pin> pin = (*cache)->get_or_load(
        "model" + std::to_string(i), [&]() -> absl::StatusOr<LoadedValue> {
          absl::StatusOr<Reservation> r =
              (*cache)->make_room(kTensorsPerModel * kTensorBytes, Device::kCpu);
          if (!r.ok()) return r.status();
          auto model = std::make_unique<TensorModel>();
          for (int t = 0; t < kTensorsPerModel; ++t) {
            if (absl::Status s = r->charge(kTensorBytes); !s.ok()) return s;
            model->weights.push_back(torch::ones({kTensorBytes / 4}, torch::kFloat32));
          }
          LoadedValue loaded;
          loaded.value = std::move(model);
          loaded.reservations.push_back(std::move(*r));
          return loaded;
        });
    if (!pin.ok()) {
      std::fprintf(stderr, "%s\n", pin.status().ToString().c_str());
      return 1;
    }
  }
  if (print_rss("loaded") != 0) return 1;
  // Evict through make_room: a load of the whole budget pushes everyone out.
  {
    absl::StatusOr<Reservation> all = (*cache)->make_room(ram.capacity_bytes(), Device::kCpu);
    if (!all.ok()) return 1;
    std::printf("stage=evicted_count value=%lld\n",
                static_cast<long long>((*cache)->stats().evictions));
  }
  return print_rss("evicted");
}

}  // namespace
}  // namespace diffusiond

int main() { return diffusiond::run(); }
