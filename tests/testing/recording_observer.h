// A CacheObserver that keeps every event it is told, for tests of what the
// cache reports.
#ifndef DIFFUSIOND_TESTS_TESTING_RECORDING_OBSERVER_H_
#define DIFFUSIOND_TESTS_TESTING_RECORDING_OBSERVER_H_

#include <vector>

#include "core/cache/cache_observer.h"
#include "core/util/mutex.h"

namespace diffusiond::testing {

class RecordingObserver : public CacheObserver {
 public:
  void on_cache_event(const CacheEvent& e) override {
    MutexLock lock(&mu_);
    events_.push_back(e);
  }
  std::vector<CacheEvent> events() {
    MutexLock lock(&mu_);
    return events_;
  }
  // The events of one kind, in order.
  std::vector<CacheEvent> events(CacheEvent::Kind kind) {
    std::vector<CacheEvent> out;
    for (CacheEvent& e : events()) {
      if (e.kind == kind) out.push_back(std::move(e));
    }
    return out;
  }

 private:
  Mutex mu_;
  std::vector<CacheEvent> events_ ABSL_GUARDED_BY(mu_);
};

}  // namespace diffusiond::testing

#endif  // DIFFUSIOND_TESTS_TESTING_RECORDING_OBSERVER_H_
