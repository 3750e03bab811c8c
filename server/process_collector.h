// ProcessCollector: the standard Prometheus process_* metrics, read from
// /proc at the moment of each scrape so they are never stale.
//
// Not here: the daemon's own diffusiond_* series (cache_stats_collector.h,
// metrics.h), or the /proc parsing (core/memory/process_memory.h,
// core/memory/process_stats.h).
#ifndef DIFFUSIOND_SERVER_PROCESS_COLLECTOR_H_
#define DIFFUSIOND_SERVER_PROCESS_COLLECTOR_H_

#include <vector>

#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace diffusiond {

// Reports process_resident_memory_bytes, process_virtual_memory_bytes,
// process_cpu_seconds_total, process_start_time_seconds, process_threads,
// process_open_fds and process_max_fds for this process. Stateless, so
// thread-safe.
class ProcessCollector final : public prometheus::Collectable {
 public:
  // Reads /proc/self now. A family whose source cannot be read is left out
  // of this scrape rather than reported as 0, so a gap shows as a gap.
  std::vector<prometheus::MetricFamily> Collect() const override;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_PROCESS_COLLECTOR_H_
