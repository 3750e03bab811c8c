#include "core/memory/process_stats.h"

#include <unistd.h>

#include <filesystem>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/util/file_text.h"

namespace diffusiond {
namespace {

// 1-based field numbers of proc(5) for /proc/<pid>/stat.
constexpr int kUtime = 14, kStime = 15, kNumThreads = 20, kStartTime = 22;

absl::StatusOr<int64_t> boot_time_seconds() {
  absl::StatusOr<std::string> text = read_text_file("/proc/stat");
  if (!text.ok()) return absl::UnavailableError(text.status().message());
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    int64_t value = 0;
    if (absl::ConsumePrefix(&line, "btime ") && absl::SimpleAtoi(line, &value)) return value;
  }
  return absl::UnavailableError("/proc/stat: no btime line");
}

}  // namespace

absl::StatusOr<ProcessStats> parse_proc_stat(absl::string_view line, int64_t ticks_per_second,
                                             int64_t boot_time_seconds) {
  const size_t close = line.rfind(')');
  if (close == absl::string_view::npos || ticks_per_second <= 0) {
    return absl::InvalidArgumentError("stat line has no command name in parentheses");
  }
  // Field 3 (state) is the first after ") ".
  std::vector<absl::string_view> fields =
      absl::StrSplit(absl::StripAsciiWhitespace(line.substr(close + 1)), ' ', absl::SkipEmpty());
  const auto field = [&](int number, int64_t* out) {
    const size_t index = static_cast<size_t>(number - 3);
    return index < fields.size() && absl::SimpleAtoi(fields[index], out);
  };
  int64_t utime = 0, stime = 0, threads = 0, start_ticks = 0;
  if (!field(kUtime, &utime) || !field(kStime, &stime) || !field(kNumThreads, &threads) ||
      !field(kStartTime, &start_ticks)) {
    return absl::InvalidArgumentError(absl::StrCat("stat line has ", fields.size() + 2,
                                                   " fields, expected at least ", kStartTime));
  }
  ProcessStats s;
  const double hz = static_cast<double>(ticks_per_second);
  s.cpu_seconds = static_cast<double>(utime + stime) / hz;
  s.threads = threads;
  s.start_time_seconds = static_cast<double>(boot_time_seconds) + static_cast<double>(start_ticks) / hz;
  return s;
}

absl::StatusOr<ProcessStats> read_process_stats() {
  absl::StatusOr<std::string> stat = read_text_file("/proc/self/stat");
  if (!stat.ok()) return absl::UnavailableError(stat.status().message());
  absl::StatusOr<int64_t> boot = boot_time_seconds();
  if (!boot.ok()) return boot.status();
  absl::StatusOr<ProcessStats> s = parse_proc_stat(*stat, ::sysconf(_SC_CLK_TCK), *boot);
  if (!s.ok()) return absl::UnavailableError(absl::StrCat("/proc/self/stat: ", s.status().message()));
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++s->open_fds;
  }
  if (ec) return absl::UnavailableError(absl::StrCat("/proc/self/fd: ", ec.message()));
  return s;
}

}  // namespace diffusiond
