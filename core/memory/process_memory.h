// Probes of this process's memory as the kernel reports it: resident set,
// its peak (with reset), virtual size, and the machine's MemTotal.
//
// Not here: cgroup limits (cgroup.h) or the budget formula (default_budget.h).
// The parse_* functions are pure so tests can feed them sample text.
#ifndef DIFFUSIOND_CORE_MEMORY_PROCESS_MEMORY_H_
#define DIFFUSIOND_CORE_MEMORY_PROCESS_MEMORY_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

struct ProcessMemory {
  int64_t rss_bytes = 0;       // VmRSS: resident now
  int64_t peak_rss_bytes = 0;  // VmHWM: resident high-water mark
  int64_t virtual_bytes = 0;   // VmSize
};

// Reads /proc/self/status. Returns UNAVAILABLE if it cannot be read.
absl::StatusOr<ProcessMemory> read_process_memory();

// Parses the text of a /proc/<pid>/status file. Returns INVALID_ARGUMENT
// naming the field if VmRSS, VmHWM or VmSize is missing or malformed.
absl::StatusOr<ProcessMemory> parse_proc_status(absl::string_view text);

// Resets VmHWM to the current RSS by writing "5" to /proc/self/clear_refs,
// so a later read_process_memory() reports the peak since this call.
// Returns UNAVAILABLE if the kernel refuses (e.g. no such file).
absl::Status reset_peak_rss();

// Reads MemTotal from `meminfo_path` (normally /proc/meminfo).
absl::StatusOr<int64_t> read_mem_total_bytes(
    absl::string_view meminfo_path = "/proc/meminfo");

// Parses MemTotal out of /proc/meminfo text.
absl::StatusOr<int64_t> parse_mem_total_bytes(absl::string_view text);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MEMORY_PROCESS_MEMORY_H_
