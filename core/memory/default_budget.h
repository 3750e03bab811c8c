// The default RAM budget: what the daemon may hold in model weights when the
// operator does not say, derived from the machine and its cgroup.
//
// Not here: flag parsing (server/) or the VRAM budget (CUDA builds ask the
// device; see docs/memory-budget.md).
#ifndef DIFFUSIOND_CORE_MEMORY_DEFAULT_BUDGET_H_
#define DIFFUSIOND_CORE_MEMORY_DEFAULT_BUDGET_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/util/bytes.h"

namespace diffusiond {

struct DefaultBudgetOptions {
  // Share of usable memory that model weights may take. The rest is for
  // activations, request buffers, libtorch itself and the allocator's slack.
  // Default 0.85.
  double fraction = 0.85;
  // Subtracted after the fraction: a fixed floor for the daemon's own
  // resident code and thread stacks, which do not scale with the machine.
  // Default 512 MiB.
  int64_t headroom_bytes = 512 * kMiB;
};

// What the probes found, kept for logs and the /stats page.
struct MachineMemory {
  int64_t mem_total_bytes = 0;
  std::optional<int64_t> cgroup_limit_bytes;  // empty: unlimited
  std::string cgroup_source;                  // file the limit came from
};

// Probes MemTotal and the cgroup limit under `root` ("/" in production).
// Returns the first probe error, naming its file.
absl::StatusOr<MachineMemory> probe_machine_memory(absl::string_view root = "/");

// Returns fraction * min(cgroup limit, MemTotal) - headroom, floored at 0.
int64_t default_ram_budget_bytes(const MachineMemory& machine,
                                 const DefaultBudgetOptions& options = {});

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MEMORY_DEFAULT_BUDGET_H_
