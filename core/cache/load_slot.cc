#include "core/cache/load_slot.h"

#include <utility>

#include "absl/status/status.h"
#include "core/cache/model_cache.h"

namespace diffusiond {

LoadSlot::LoadSlot(LoadSlot&& other) noexcept
    : cache_(other.cache_), entry_(std::move(other.entry_)), start_(other.start_) {}

LoadSlot::~LoadSlot() {
  if (entry_ != nullptr) {
    (void)finish(absl::CancelledError("the load was abandoned before it finished"));
  }
}

absl::StatusOr<Pin> LoadSlot::finish(absl::StatusOr<LoadedValue> loaded) {
  if (entry_ == nullptr) return absl::FailedPreconditionError("this load was already finished");
  const std::shared_ptr<cache_internal::Entry> entry = std::move(entry_);
  const absl::Duration took = cache_->clock_->now() - start_;
  std::vector<CacheEvent> events;
  absl::StatusOr<Pin> result;
  {
    MutexLock lock(&cache_->mu_);
    result = cache_->finish_load(entry, std::move(loaded), took, &events);
  }
  cache_->publish(events);
  return result;
}

}  // namespace diffusiond
