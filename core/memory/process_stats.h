// The process-level figures Prometheus' process_* metrics report, read from
// /proc at the moment they are asked for: CPU seconds, start time, threads,
// open file descriptors (memory figures are in process_memory.h).
#ifndef DIFFUSIOND_CORE_MEMORY_PROCESS_STATS_H_
#define DIFFUSIOND_CORE_MEMORY_PROCESS_STATS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

struct ProcessStats {
  double cpu_seconds = 0;         // user + system
  double start_time_seconds = 0;  // since the Unix epoch
  int64_t threads = 0;
  int64_t open_fds = 0;
};

// Reads /proc/self/stat, /proc/stat (boot time) and /proc/self/fd.
// UNAVAILABLE naming the file when one cannot be read or parsed.
absl::StatusOr<ProcessStats> read_process_stats();

// Parses a /proc/<pid>/stat line given the clock ticks per second and the
// boot time; fields after the parenthesised command name are counted from
// its closing parenthesis, since the name may hold spaces and parentheses.
// INVALID_ARGUMENT if the line is malformed. open_fds is left 0.
absl::StatusOr<ProcessStats> parse_proc_stat(absl::string_view line, int64_t ticks_per_second,
                                             int64_t boot_time_seconds);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MEMORY_PROCESS_STATS_H_
