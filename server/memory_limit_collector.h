// MemoryLimitCollector: diffusiond_memory_limit_bytes, the memory the process
// may use before the kernel's OOM killer acts: its cgroup's memory limit, or
// MemTotal when that is smaller or there is none. Read at each scrape, since a
// container's limit may be resized while it runs.
//
// Not here: reading cgroups and /proc/meminfo (core/memory/default_budget.h,
// core/memory/cgroup.h), or the budget derived from the limit.
#ifndef DIFFUSIOND_SERVER_MEMORY_LIMIT_COLLECTOR_H_
#define DIFFUSIOND_SERVER_MEMORY_LIMIT_COLLECTOR_H_

#include <string>
#include <utility>
#include <vector>

#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace diffusiond {

// Stateless, so thread-safe.
class MemoryLimitCollector final : public prometheus::Collectable {
 public:
  // Reads the machine under `root` ("/" in production; tests lay out a tree).
  explicit MemoryLimitCollector(std::string root = "/") : root_(std::move(root)) {}

  // One sample labelled device="cpu", like the RAM budget it bounds; none
  // when the files cannot be read, so a gap shows as a gap.
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const std::string root_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_MEMORY_LIMIT_COLLECTOR_H_
