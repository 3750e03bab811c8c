#include "core/memory/default_budget.h"

#include <algorithm>

#include "core/memory/cgroup.h"
#include "core/memory/process_memory.h"
#include "core/util/status_macros.h"

namespace diffusiond {

absl::StatusOr<MachineMemory> probe_machine_memory(absl::string_view root) {
  MachineMemory machine;
  const std::string meminfo =
      root == "/" ? "/proc/meminfo" : std::string(root) + "/proc/meminfo";
  DIFFUSIOND_ASSIGN_OR_RETURN(machine.mem_total_bytes,
                              read_mem_total_bytes(meminfo));
  DIFFUSIOND_ASSIGN_OR_RETURN(CgroupMemoryLimit cgroup,
                              read_cgroup_memory_limit(root));
  machine.cgroup_limit_bytes = cgroup.limit_bytes;
  machine.cgroup_source = cgroup.source;
  return machine;
}

int64_t default_ram_budget_bytes(const MachineMemory& machine,
                                 const DefaultBudgetOptions& options) {
  int64_t usable = machine.mem_total_bytes;
  if (machine.cgroup_limit_bytes.has_value()) {
    usable = std::min(usable, *machine.cgroup_limit_bytes);
  }
  const auto share = static_cast<int64_t>(static_cast<double>(usable) * options.fraction);
  return std::max<int64_t>(0, share - options.headroom_bytes);
}

}  // namespace diffusiond
