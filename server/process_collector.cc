#include "server/process_collector.h"

#include <sys/resource.h>

#include <utility>

#include "absl/status/statusor.h"
#include "core/memory/process_memory.h"
#include "core/memory/process_stats.h"
#include "server/internal/metric_family.h"

namespace diffusiond {
namespace {

using internal::add_sample;
using internal::make_family;
using prometheus::MetricFamily;
using prometheus::MetricType;

MetricFamily gauge(const char* name, const char* help, double value) {
  MetricFamily family = make_family(name, help, MetricType::Gauge);
  add_sample(&family, value);
  return family;
}

}  // namespace

std::vector<MetricFamily> ProcessCollector::Collect() const {
  std::vector<MetricFamily> out;
  if (absl::StatusOr<ProcessMemory> memory = read_process_memory(); memory.ok()) {
    out.push_back(gauge("process_resident_memory_bytes",
                        "Resident set size of the daemon process in bytes (VmRSS).",
                        static_cast<double>(memory->rss_bytes)));
    out.push_back(gauge("process_virtual_memory_bytes",
                        "Virtual memory size of the daemon process in bytes (VmSize).",
                        static_cast<double>(memory->virtual_bytes)));
  }
  if (absl::StatusOr<ProcessStats> stats = read_process_stats(); stats.ok()) {
    MetricFamily cpu = make_family("process_cpu_seconds_total",
                                   "User and system CPU time spent by the daemon in seconds.",
                                   MetricType::Counter);
    add_sample(&cpu, stats->cpu_seconds);
    out.push_back(std::move(cpu));
    out.push_back(gauge("process_start_time_seconds",
                        "Start time of the daemon process since the Unix epoch in seconds.",
                        stats->start_time_seconds));
    out.push_back(gauge("process_threads", "Number of OS threads in the daemon process.",
                        static_cast<double>(stats->threads)));
    out.push_back(gauge("process_open_fds", "Number of open file descriptors.",
                        static_cast<double>(stats->open_fds)));
  }
  // The soft limit is the one open() runs into; "unlimited" has no number.
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    out.push_back(gauge("process_max_fds",
                        "Maximum number of open file descriptors (soft RLIMIT_NOFILE).",
                        static_cast<double>(limit.rlim_cur)));
  }
  return out;
}

}  // namespace diffusiond
