// CacheEventLog: a CacheObserver that writes one structured (logfmt) line
// per load, failed load, eviction, rejection and unload — the model, its
// bytes, the seconds it took, and the budget afterwards — for operators
// grepping logs next to the metrics.
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
  // `sink` receives each line without a trailing newline.
  CacheEventLog(const Budget* ram_budget, std::function<void(absl::string_view)> sink)
      : ram_budget_(ram_budget), sink_(std::move(sink)) {}

  void on_cache_event(const CacheEvent& event) override;

  // The line for `event` given the budget state after it.
  static std::string format(const CacheEvent& event, const BudgetSnapshot& after);

 private:
  const Budget* const ram_budget_;
  const std::function<void(absl::string_view)> sink_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_CACHE_EVENT_LOG_H_
