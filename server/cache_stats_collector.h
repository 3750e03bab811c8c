// CacheStatsCollector: the diffusiond_* series that describe the model
// cache's present state — budgets, reserved and used bytes, each resident
// model's bytes and pins — read from a CacheStats source at each scrape, so
// a model's series vanish the moment it leaves the cache.
//
// Not here: event counters and latency histograms (metrics.h) or process_*
// (process_collector.h).
#ifndef DIFFUSIOND_SERVER_CACHE_STATS_COLLECTOR_H_
#define DIFFUSIOND_SERVER_CACHE_STATS_COLLECTOR_H_

#include <functional>
#include <vector>

#include "core/cache/cache_stats.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace diffusiond {

// Thread-safe if `source` is: each scrape calls it once, possibly from
// several exposer threads at a time.
class CacheStatsCollector final : public prometheus::Collectable {
 public:
  // `source` returns the cache's statistics now; an empty function reports
  // nothing.
  explicit CacheStatsCollector(std::function<CacheStats()> source) : source_(std::move(source)) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

  // Returns the families describing `stats`. Entries still loading have no
  // per-model series: their bytes are reservations, not resident weights.
  static std::vector<prometheus::MetricFamily> families(const CacheStats& stats);

 private:
  const std::function<CacheStats()> source_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_CACHE_STATS_COLLECTOR_H_
