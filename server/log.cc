#include "server/log.h"

#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
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
  // Any byte up to space (tabs and carriage returns included) would split or
  // break the line for a logfmt reader, and values can come from clients.
  const auto needs_quotes = [](char c) {
    return static_cast<unsigned char>(c) <= ' ' || c == '"' || c == '=' || c == '\\' || c == '\x7f';
  };
  if (!value.empty() && std::none_of(value.begin(), value.end(), needs_quotes)) return std::string(value);
  std::string out = "\"";
  for (const char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < ' ' || c == '\x7f') {
          absl::StrAppend(&out, "\\u00", absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
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
