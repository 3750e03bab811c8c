#include "core/memory/default_threads.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "core/memory/cgroup.h"

namespace diffusiond {

absl::StatusOr<MachineCpus> probe_machine_cpus(absl::string_view root) {
  MachineCpus machine;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    machine.usable = std::max(1, CPU_COUNT(&set));
  } else {
    machine.usable = std::max(1u, std::thread::hardware_concurrency());
  }
  absl::StatusOr<CgroupCpuLimit> limit = read_cgroup_cpu_limit(root);
  if (!limit.ok()) return limit.status();
  machine.cgroup_cpus = limit->cpus;
  machine.cgroup_source = limit->source;
  return machine;
}

int default_compute_threads(const MachineCpus& machine) {
  int threads = std::max(1, machine.usable);
  if (machine.cgroup_cpus.has_value()) {
    threads = std::min(threads, static_cast<int>(std::floor(*machine.cgroup_cpus)));
  }
  return std::max(1, threads);
}

}  // namespace diffusiond
