// The cgroup memory and CPU limits that apply to this process, for cgroup
// v2 (memory.max, cpu.max) and v1 (memory.limit_in_bytes, cpu.cfs_quota_us
// over cpu.cfs_period_us), read under an injectable filesystem root so tests
// can lay out sample hierarchies.
//
// Not here: the budget formula (default_budget.h) or the thread count
// (default_threads.h).
#ifndef DIFFUSIOND_CORE_MEMORY_CGROUP_H_
#define DIFFUSIOND_CORE_MEMORY_CGROUP_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

// cgroup v1 writes "unlimited" as LONG_MAX rounded down to a page
// (9223372036854771712); anything at or above this is treated as no limit.
inline constexpr int64_t kCgroupV1UnlimitedThreshold = int64_t{1} << 62;

enum class CgroupVersion { kNone, kV1, kV2 };

struct CgroupMemoryLimit {
  using Version = CgroupVersion;
  Version version = Version::kNone;
  // The tightest limit on this process's cgroup or any ancestor; empty when
  // unlimited or when no cgroup memory controller is visible.
  std::optional<int64_t> limit_bytes;
  // The file the limit came from, for logs ("" when unlimited).
  std::string source;
};

// Parses the content of memory.max or memory.limit_in_bytes. Returns an
// empty optional for "max" and for the v1 sentinel, and INVALID_ARGUMENT
// for anything that is not a non-negative integer.
absl::StatusOr<std::optional<int64_t>> parse_cgroup_limit(absl::string_view text);

// Reads the limit for this process under `root` ("/" in production): finds
// its cgroup in <root>/proc/self/cgroup, then walks from that cgroup up to
// the hierarchy root taking the smallest limit found. Missing files mean no
// limit, not an error. Returns INVALID_ARGUMENT naming the file if a limit
// file exists but cannot be parsed.
absl::StatusOr<CgroupMemoryLimit> read_cgroup_memory_limit(
    absl::string_view root = "/");

struct CgroupCpuLimit {
  CgroupVersion version = CgroupVersion::kNone;
  // The tightest quota in CPUs (quota / period, e.g. 2.5) on this process's
  // cgroup or any ancestor; empty when unlimited or not visible.
  std::optional<double> cpus;
  std::string source;  // the file the quota came from
};

// Parses cgroup v2's cpu.max ("max 100000", "250000 100000", or a lone
// quota with the default period). Empty for "max"; INVALID_ARGUMENT for
// anything else malformed.
absl::StatusOr<std::optional<double>> parse_cgroup_cpu_max(absl::string_view text);

// As read_cgroup_memory_limit, for the CPU quota.
absl::StatusOr<CgroupCpuLimit> read_cgroup_cpu_limit(absl::string_view root = "/");

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MEMORY_CGROUP_H_
