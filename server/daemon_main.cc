// diffusiond: the model-serving daemon. Configuration: `diffusiond --help`
// and docs/configuration.md. SIGTERM or SIGINT drains gracefully and exits 0.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "server/daemon.h"
#include "server/daemon_options.h"
#include "server/log.h"

int main(int argc, char** argv) {
  using namespace diffusiond;
  // Blocked before any thread starts, so every thread inherits the mask and
  // only sigwait below sees the signals.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const std::vector<std::string> args(argv + 1, argv + argc);
  absl::StatusOr<DaemonOptions> options = parse_daemon_options(args, [](const char* name) { return std::getenv(name); });
  if (!options.ok()) {
    std::fprintf(stderr, "diffusiond: %s\n(see diffusiond --help)\n", std::string(options.status().message()).c_str());
    return 2;
  }
  if (options->help) {
    std::fputs(daemon_options_help().c_str(), stdout);
    return 0;
  }
  const Log log(*parse_log_level(options->log_level));
  absl::StatusOr<std::unique_ptr<Daemon>> daemon = Daemon::start(*options, log);
  if (!daemon.ok()) {
    log.error("cannot start", absl::StrCat("code=", absl::StatusCodeToString(daemon.status().code()),
                                           " error=", logfmt_value(daemon.status().message())));
    return 1;
  }
  int signal = 0;
  sigwait(&signals, &signal);
  log.info("signal", absl::StrCat("signal=", signal == SIGTERM ? "SIGTERM" : "SIGINT"));
  (*daemon)->drain();
  daemon->reset();
  return 0;
}
