// ModelSeries: the model-labelled children of DaemonMetrics' histogram
// families, bounded in number and removed with their model.
//
// A model id is a label value chosen by clients, so series labelled with it
// would otherwise grow with every id ever loaded. Here a model's series are
// deleted when the cache evicts or unloads it, and at most kMaxModels
// distinct ids have series of their own at any time; observations for any
// further id are aggregated under the label value "other".
//
// Only a model the cache holds gets observations: a Step or Denoise releases
// its pin before its time is observed, so the model may already be unloaded
// (and its series deleted) by then, and observing it would re-create them for
// good. Such a late observation is dropped. Cache events arrive after the
// cache's lock is released, so a load's event may follow the unload's; each
// id's loads minus its unloads and evictions is counted, and the id is held
// while that is positive, whatever the order.
//
// Not here: the families themselves (metrics.cc registers them).
#ifndef DIFFUSIOND_SERVER_MODEL_SERIES_H_
#define DIFFUSIOND_SERVER_MODEL_SERIES_H_

#include <cstddef>
#include <map>
#include <string>

#include "absl/strings/string_view.h"
#include "core/util/mutex.h"
#include "prometheus/family.h"
#include "prometheus/histogram.h"

namespace diffusiond {

// Thread-safe. The families must outlive this object.
class ModelSeries {
 public:
  // Distinct model ids with series of their own, "other" not counted.
  static constexpr size_t kMaxModels = 64;
  // The label value observations beyond kMaxModels are aggregated under.
  static constexpr absl::string_view kOtherModel = "other";

  // `step` is labelled {model}, `denoise` {model, result}.
  ModelSeries(prometheus::Family<prometheus::Histogram>* step,
              prometheus::Family<prometheus::Histogram>* denoise);

  // Records that the cache loaded `model` (a kLoaded event).
  void loaded(absl::string_view model);
  // Observes `seconds` on the step histogram of `model` (or of "other");
  // nothing if the cache does not hold `model`.
  void observe_step(absl::string_view model, double seconds);
  // Observes `seconds` on the denoise histogram of `model` and `result`;
  // nothing if the cache does not hold `model`.
  void observe_denoise(absl::string_view model, absl::string_view result, double seconds);
  // Records that `model` left the cache (evicted or unloaded). Once no load
  // of it is left, removes every series of it, freeing its place; nothing
  // for an id without series of its own (one counted under "other" stays).
  void forget(absl::string_view model);

  // Returns the number of model ids with series of their own.
  size_t tracked_models_for_test() const;

 private:
  struct Series {
    prometheus::Histogram* step = nullptr;
    std::map<std::string, prometheus::Histogram*, std::less<>> denoise;  // by result
  };

  // Returns the series of `model`, or of "other" when kMaxModels others
  // already have theirs; nullptr when the cache does not hold `model`.
  Series* series_for(absl::string_view model, std::string* label) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  prometheus::Family<prometheus::Histogram>* const step_;
  prometheus::Family<prometheus::Histogram>* const denoise_;
  mutable Mutex mu_;
  std::map<std::string, Series, std::less<>> models_ ABSL_GUARDED_BY(mu_);  // by model id
  Series other_ ABSL_GUARDED_BY(mu_);
  // Loads minus unloads and evictions seen, by model id; only non-zero
  // entries are kept (negative while a load's event is late).
  std::map<std::string, int, std::less<>> held_ ABSL_GUARDED_BY(mu_);
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_MODEL_SERIES_H_
