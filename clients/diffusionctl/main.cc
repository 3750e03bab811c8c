// diffusionctl: a command-line client of the diffusiond daemon. See
// `diffusionctl --help`.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "clients/diffusionctl/call_canceller.h"
#include "clients/diffusionctl/channel.h"
#include "clients/diffusionctl/command_line.h"
#include "clients/diffusionctl/commands.h"
#include "clients/diffusionctl/interrupt_watcher.h"
#include "clients/diffusionctl/token.h"

namespace diffusiond::ctl {
namespace {

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitCancelled = 130;  // as a shell reports a SIGINT

// The usage of the command named in `args`, or the whole help.
std::string usage_for(const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    if (is_command(arg)) return help_text(arg);
  }
  return help_text("");
}

int run(const std::vector<std::string>& args) {
  // Before gRPC starts a thread, so that every thread blocks the signals.
  CallCanceller canceller;
  InterruptWatcher watcher([&canceller] {
    std::cerr << "\ndiffusionctl: cancelling (Ctrl-C again to quit at once)" << std::endl;
    canceller.cancel();
  });

  absl::StatusOr<Invocation> invocation =
      parse_command_line(args, std::getenv("DIFFUSIOND_ADDRESS"));
  if (!invocation.ok()) {
    std::cerr << "diffusionctl: " << invocation.status().message() << "\n\n" << usage_for(args);
    return kExitUsage;
  }
  if (invocation->help) {
    std::cout << help_text(invocation->help_command);
    return 0;
  }
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = open_channel(invocation->global);
  absl::StatusOr<std::string> token =
      resolve_token(invocation->global, [](const char* name) { return std::getenv(name); });
  absl::Status status = channel.ok() ? token.status() : channel.status();
  if (status.ok()) {
    CommandEnv env;
    env.channel = *channel;
    env.address = invocation->global.address;
    env.out = &std::cout;
    env.err = &std::cerr;
    env.json = invocation->global.json;
    env.terminal = isatty(STDERR_FILENO) == 1;
    env.timeout = invocation->global.timeout;
    env.canceller = &canceller;
    env.token = *std::move(token);
    status = run_command(env, invocation->command);
  }
  std::cout.flush();
  if (status.ok()) return 0;
  std::cerr << "diffusionctl: " << absl::StatusCodeToString(status.code()) << ": "
            << status.message() << std::endl;
  return status.code() == absl::StatusCode::kCancelled && canceller.cancelled() ? kExitCancelled
                                                                                : kExitError;
}

}  // namespace
}  // namespace diffusiond::ctl

int main(int argc, char** argv) {
  return diffusiond::ctl::run(std::vector<std::string>(argv + 1, argv + argc));
}
