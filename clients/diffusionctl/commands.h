// diffusionctl's commands, each a function of its parsed options and a
// CommandEnv (the channel and the streams to write to), so tests run them
// against an in-process server and read what they print.
//
// Not here: parsing (command_line.h), the channel (channel.h), main().
#ifndef DIFFUSIOND_CLIENTS_DIFFUSIONCTL_COMMANDS_H_
#define DIFFUSIOND_CLIENTS_DIFFUSIONCTL_COMMANDS_H_

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "clients/diffusionctl/call_canceller.h"
#include "clients/diffusionctl/command_line.h"

namespace diffusiond::ctl {

// What a command runs with. Nothing is owned but the channel.
struct CommandEnv {
  std::shared_ptr<grpc::ChannelInterface> channel;
  std::string address;                    // the daemon's, for error messages
  std::ostream* out = nullptr;            // results (stdout)
  std::ostream* err = nullptr;            // progress (stderr)
  bool json = false;                      // results as JSON
  bool terminal = false;                  // `err` is a terminal: redraw progress in place
  std::optional<absl::Duration> timeout;  // deadline of each call
  CallCanceller* canceller = nullptr;     // may be null
  std::string token;                      // bearer token for each call; empty: none
};

// Each runs one command: it prints the result to env.out and returns OK, or
// returns the call's error with the daemon's code and message (CANCELLED
// after env.canceller->cancel()).
absl::Status run_command(const CommandEnv& env, const LoadOptions& options);
absl::Status run_command(const CommandEnv& env, const UnloadOptions& options);
absl::Status run_command(const CommandEnv& env, const ListOptions& options);
absl::Status run_command(const CommandEnv& env, const AvailableOptions& options);
// Prints one line per event (one JSON object per line with --json) as it
// arrives; OK after options.count events or at env.timeout.
absl::Status run_command(const CommandEnv& env, const EventsOptions& options);
absl::Status run_command(const CommandEnv& env, const StatsOptions& options);
absl::Status run_command(const CommandEnv& env, const MakeRoomOptions& options);
absl::Status run_command(const CommandEnv& env, const LeaseOptions& options);
absl::Status run_command(const CommandEnv& env, const RenewOptions& options);
absl::Status run_command(const CommandEnv& env, const ReleaseOptions& options);
// Prints the status; UNAVAILABLE unless it is SERVING.
absl::Status run_command(const CommandEnv& env, const HealthOptions& options);
// Reads the input file and writes the output file before printing.
absl::Status run_command(const CommandEnv& env, const StepOptions& options);
absl::Status run_command(const CommandEnv& env, const DenoiseOptions& options);
// Show each progress event on env.err; write the PNG or tensors, then print
// what was written. Nothing is written when the call fails.
absl::Status run_command(const CommandEnv& env, const GenerateOptions& options);
absl::Status run_command(const CommandEnv& env, const EncodeOptions& options);
absl::Status run_command(const CommandEnv& env, const DecodeOptions& options);

// Runs whichever command `options` holds.
absl::Status run_command(const CommandEnv& env, const CommandOptions& options);

// The metadata header that names a model-scoped call's model, so that a proxy can send every call for
// one model to the replica that caches it (docs/scaling.md). The daemon ignores it.
inline constexpr char kRoutingHeader[] = "diffusiond-model";

// Helpers for the command files.
namespace internal {

// A context carrying env.timeout as its deadline, env.token as `authorization: Bearer` metadata and,
// unless `model` is empty, the routing header.
std::unique_ptr<grpc::ClientContext> new_context(const CommandEnv& env, absl::string_view model = {});

// `status` as an absl::Status (the codes are the same set), naming the
// address when the daemon cannot be reached.
absl::Status from_grpc(const CommandEnv& env, const grpc::Status& status);

// Makes the unary call `method` (e.g. &v1::ModelService::Stub::UnloadModel)
// on a new stub over env.channel, with a context from new_context (routed by
// `model`) that env.canceller can cancel; returns from_grpc of its status.
template <typename Stub, typename Request, typename Response>
absl::Status unary_call(const CommandEnv& env,
                        grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&, Response*),
                        const Request& request, Response* response, absl::string_view model = {}) {
  Stub stub(env.channel);
  std::unique_ptr<grpc::ClientContext> context = new_context(env, model);
  CallCanceller::Scope scope(env.canceller, context.get());
  return from_grpc(env, (stub.*method)(context.get(), request, response));
}

}  // namespace internal
}  // namespace diffusiond::ctl

#endif  // DIFFUSIOND_CLIENTS_DIFFUSIONCTL_COMMANDS_H_
