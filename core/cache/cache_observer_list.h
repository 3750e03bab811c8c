// Several CacheObservers behind the cache's one observer slot (the daemon
// sends each event to its log and its metrics).
#ifndef DIFFUSIOND_CORE_CACHE_CACHE_OBSERVER_LIST_H_
#define DIFFUSIOND_CORE_CACHE_CACHE_OBSERVER_LIST_H_

#include <vector>

#include "core/cache/cache_observer.h"

namespace diffusiond {

// Thread-safe if its observers are; they are not owned and must outlive it.
class CacheObserverList final : public CacheObserver {
 public:
  explicit CacheObserverList(std::vector<CacheObserver*> observers) : observers_(std::move(observers)) {}
  void on_cache_event(const CacheEvent& event) override {
    for (CacheObserver* o : observers_) o->on_cache_event(event);
  }

 private:
  const std::vector<CacheObserver*> observers_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_CACHE_CACHE_OBSERVER_LIST_H_
