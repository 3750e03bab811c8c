// diffusiond: the model-serving daemon. Configuration: `diffusiond --help`
// and docs/configuration.md. SIGTERM or SIGINT drains gracefully and exits 0.
#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/cpu/blas_kernels.h"
#include "server/daemon.h"
#include "server/daemon_options.h"
#include "server/log.h"

namespace {

// The signal handler's only job: wake main through a pipe (async-signal-
// safe). A handler rather than a blocked mask, because some libraries'
// threads unblock SIGTERM; with a handler installed a second SIGTERM during
// the drain is harmless whichever thread receives it.
int wake_fd = -1;
void on_signal(int signal) {
  const unsigned char byte = static_cast<unsigned char>(signal);
  (void)!::write(wake_fd, &byte, 1);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace diffusiond;
  // First, before any thread or BLAS call: a generic OpenBLAS fallback is
  // corrected by a re-exec (the ready line says which kernels run).
  ensure_blas_kernels(argv);
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC) != 0) return 1;
  wake_fd = wake[1];
  struct sigaction action = {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

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
  unsigned char signal = 0;
  while (::read(wake[0], &signal, 1) != 1) {
  }
  log.info("signal", absl::StrCat("signal=", signal == SIGTERM ? "SIGTERM" : "SIGINT"));
  (*daemon)->drain();
  daemon->reset();
  return 0;
}
