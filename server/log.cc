#include "server/log.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace diffusiond {
namespace {

constexpr absl::string_view kLevelNames[] = {"debug", "info", "warning", "error"};

void write_stderr(absl::string_view line) {
  const std::string text = absl::StrCat(line, "\n");
  // One write() per line keeps lines from concurrent threads whole.
  (void)!::write(STDERR_FILENO, text.data(), text.size());
}

}  // namespace

absl::StatusOr<LogLevel> parse_log_level(absl::string_view name) {
  for (int i = 0; i < 4; ++i) {
    if (name == kLevelNames[i]) return static_cast<LogLevel>(i);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown log level '", name, "'"));
}

std::string logfmt_value(absl::string_view value) {
  if (!value.empty() && value.find_first_of(" \"=\\\n") == absl::string_view::npos) {
    return std::string(value);
  }
  return absl::StrCat("\"", absl::StrReplaceAll(value, {{"\\", "\\\\"}, {"\"", "\\\""}, {"\n", "\\n"}}), "\"");
}

Log::Log(LogLevel min_level, Sink sink)
    : min_level_(min_level), sink_(sink ? std::move(sink) : Sink(write_stderr)) {}

void Log::write(LogLevel level, absl::string_view msg, absl::string_view fields) const {
  if (!enabled(level)) return;
  std::string line = absl::StrCat("ts=", absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()),
                                  " level=", kLevelNames[static_cast<int>(level)], " msg=", logfmt_value(msg));
  if (!fields.empty()) absl::StrAppend(&line, " ", fields);
  sink_(line);
}

}  // namespace diffusiond
