#include "core/vram/vram_tier.h"

namespace diffusiond {

absl::StatusOr<std::unique_ptr<VramTier>> VramTier::create(const VramTierOptions& options) {
  if (options.vram_budget == nullptr || options.vram_budget->device() != Device::kCuda) {
    return absl::InvalidArgumentError("the VRAM tier needs a VRAM (cuda) budget");
  }
  auto no_ram = std::make_unique<Budget>(Device::kCpu, 0);
  ModelCacheOptions cache;
  cache.ram_budget = no_ram.get();
  cache.vram_budget = options.vram_budget;
  cache.observer = options.observer;
  cache.clock = options.clock;
  // Freed device memory is not the process heap: nothing to trim.
  cache.trim_heap_after_eviction = false;
  absl::StatusOr<std::unique_ptr<ModelCache>> placements = ModelCache::create(cache);
  if (!placements.ok()) return placements.status();
  return std::unique_ptr<VramTier>(new VramTier(options.vram_budget, std::move(no_ram), std::move(*placements)));
}

absl::StatusOr<Pin> VramTier::acquire(const std::string& key, const Loader& place) {
  return placements_->get_or_load(key, place);
}

absl::StatusOr<Pin> VramTier::find(const std::string& key) { return placements_->get(key); }

absl::StatusOr<Reservation> VramTier::make_room(int64_t bytes, std::vector<std::string>* evicted) {
  return placements_->make_room(bytes, Device::kCuda, evicted);
}

absl::Status VramTier::drop(const std::string& key, bool wait) {
  UnloadOptions options;
  options.wait = wait;
  return placements_->unload(key, options).status();
}

}  // namespace diffusiond
