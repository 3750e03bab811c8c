// CacheEventLog: a CacheObserver that writes one structured (logfmt) line
// per load, failed load, eviction, rejection and unload — the model, its
// bytes, the seconds it took, and the budget afterwards — for operators
// grepping logs next to the metrics.
//
// Over a VRAM (cuda) budget it logs the VRAM tier's events instead, marked
// `tier=vram` and named for what they mean there: placed, place_failed,
// evicted_to_ram (the model stays loaded), dropped (its model left RAM)
// and rejected.
#ifndef DIFFUSIOND_SERVER_CACHE_EVENT_LOG_H_
#define DIFFUSIOND_SERVER_CACHE_EVENT_LOG_H_

#include <functional>
#include <string>

#include "absl/strings/string_view.h"
#include "core/cache/cache_observer.h"
#include "core/memory/budget.h"

namespace diffusiond {

// Thread-safe if `sink` is. The budget must outlive the log.
class CacheEventLog final : public CacheObserver {
 public:
  // `sink` receives each line without a trailing newline. `budget` is the
  // RAM budget of the model cache, or the VRAM budget of the VRAM tier.
  CacheEventLog(const Budget* budget, std::function<void(absl::string_view)> sink)
      : budget_(budget), sink_(std::move(sink)) {}

  void on_cache_event(const CacheEvent& event) override;

  // The line for `event` given the budget state after it; `after.device`
  // says which tier it comes from.
  static std::string format(const CacheEvent& event, const BudgetSnapshot& after);

 private:
  const Budget* const budget_;
  const std::function<void(absl::string_view)> sink_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_CACHE_EVENT_LOG_H_
