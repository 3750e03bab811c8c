#include "server/memory_limit_collector.h"

#include <algorithm>

#include "absl/status/statusor.h"
#include "core/memory/default_budget.h"
#include "server/internal/metric_family.h"

namespace diffusiond {

std::vector<prometheus::MetricFamily> MemoryLimitCollector::Collect() const {
  absl::StatusOr<MachineMemory> machine = probe_machine_memory(root_);
  if (!machine.ok()) return {};
  int64_t limit = machine->mem_total_bytes;
  if (machine->cgroup_limit_bytes.has_value()) limit = std::min(limit, *machine->cgroup_limit_bytes);
  prometheus::MetricFamily family = internal::make_family(
      "diffusiond_memory_limit_bytes",
      "Bytes of RAM the process may use before the OOM killer acts: its cgroup's memory limit, or MemTotal "
      "when smaller or unlimited.",
      prometheus::MetricType::Gauge);
  internal::add_sample(&family, static_cast<double>(limit), {{"device", "cpu"}});
  return {std::move(family)};
}

}  // namespace diffusiond
