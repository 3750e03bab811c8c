// The cgroup memory limit that applies to this process, for cgroup v2
// (memory.max) and v1 (memory.limit_in_bytes), read under an injectable
// filesystem root so tests can lay out sample hierarchies.
//
// Not here: the budget formula (default_budget.h).
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

struct CgroupMemoryLimit {
  enum class Version { kNone, kV1, kV2 };
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

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MEMORY_CGROUP_H_
