// The default number of threads a forward may use: the CPUs this process
// may actually run on, which in a container is its cgroup CPU quota rather
// than the node's core count. libtorch's own default is neither (Debian's
// 1.13 reported one intra-op thread on a 2-core machine), and one that
// counted the node's 32 cores inside a 2-CPU pod would be throttled.
//
// Not here: applying the count (the daemon does, through libtorch).
#ifndef DIFFUSIOND_CORE_MEMORY_DEFAULT_THREADS_H_
#define DIFFUSIOND_CORE_MEMORY_DEFAULT_THREADS_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

struct MachineCpus {
  int usable = 1;                     // CPUs in this process's affinity mask
  std::optional<double> cgroup_cpus;  // cgroup quota in CPUs; empty: none
  std::string cgroup_source;          // file the quota came from
};

// Probes the affinity mask and the cgroup quota under `root` ("/" in
// production). Returns the first probe error, naming its file.
absl::StatusOr<MachineCpus> probe_machine_cpus(absl::string_view root = "/");

// min(usable, floor(quota)), at least 1: a fractional quota's last CPU would
// be throttled mid-forward, stalling every thread of the parallel region.
int default_compute_threads(const MachineCpus& machine);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MEMORY_DEFAULT_THREADS_H_
