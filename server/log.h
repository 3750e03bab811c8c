// The daemon's log: one logfmt line per event on stderr
// (`ts=… level=info msg=ready listen=127.0.0.1:50051`), so that operators
// and scripts can grep or parse it next to the metrics.
#ifndef DIFFUSIOND_SERVER_LOG_H_
#define DIFFUSIOND_SERVER_LOG_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// "debug", "info", "warning" or "error"; INVALID_ARGUMENT otherwise.
absl::StatusOr<LogLevel> parse_log_level(absl::string_view name);

// A logfmt value: bare when it can be, otherwise quoted with \ and "
// escaped and control characters written as \n, \r, \t or \u00XX.
std::string logfmt_value(absl::string_view value);

// Thread-safe: each line is written with one call of the sink.
class Log {
 public:
  using Sink = std::function<void(absl::string_view line)>;
  // The default sink writes the line and a newline to stderr.
  explicit Log(LogLevel min_level, Sink sink = nullptr);

  bool enabled(LogLevel level) const { return level >= min_level_; }
  // `fields` are logfmt pairs already formatted ("model=x bytes=3"), or empty.
  void write(LogLevel level, absl::string_view msg, absl::string_view fields = "") const;

  void info(absl::string_view msg, absl::string_view fields = "") const { write(LogLevel::kInfo, msg, fields); }
  void warning(absl::string_view msg, absl::string_view fields = "") const {
    write(LogLevel::kWarning, msg, fields);
  }
  void error(absl::string_view msg, absl::string_view fields = "") const { write(LogLevel::kError, msg, fields); }

 private:
  const LogLevel min_level_;
  const Sink sink_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_LOG_H_
