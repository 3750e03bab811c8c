// stats, make-room, events: the CacheService commands; and health.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "diffusiond/v1/cache_service.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "clients/diffusionctl/commands.h"
#include "clients/diffusionctl/format.h"

namespace diffusiond::ctl {

using internal::unary_call;

absl::Status run_command(const CommandEnv& env, const StatsOptions&) {
  v1::GetStatsResponse response;
  const absl::Status status =
      unary_call(env, &v1::CacheService::Stub::GetStats, v1::GetStatsRequest(), &response);
  if (!status.ok()) return status;
  *env.out << (env.json ? to_json(response) : format_stats(response));
  return absl::OkStatus();
}

absl::Status run_command(const CommandEnv& env, const MakeRoomOptions& options) {
  v1::MakeRoomRequest request;
  request.set_bytes(options.bytes);
  request.set_device(options.device);
  v1::MakeRoomResponse response;
  const absl::Status status =
      unary_call(env, &v1::CacheService::Stub::MakeRoom, request, &response);
  if (!status.ok()) return status;
  if (env.json) {
    *env.out << to_json(response);
    return absl::OkStatus();
  }
  *env.out << "available: " << short_bytes(response.available_bytes()) << " on " << options.device
           << "\nevicted: "
           << (response.evicted_model_ids().empty()
                   ? std::string("nothing")
                   : absl::StrJoin(response.evicted_model_ids(), ", "))
           << "\n";
  return absl::OkStatus();
}

absl::Status run_command(const CommandEnv& env, const EventsOptions& options) {
  v1::WatchEventsRequest request;
  request.set_no_progress(!options.progress);
  auto stub = v1::CacheService::NewStub(env.channel);
  // Not model-scoped: no routing header.
  std::unique_ptr<grpc::ClientContext> context = internal::new_context(env);
  CallCanceller::Scope scope(env.canceller, context.get());
  std::unique_ptr<grpc::ClientReader<v1::WatchEvent>> reader = stub->WatchEvents(context.get(), request);
  v1::WatchEvent event;
  int64_t seen = 0;
  while (reader->Read(&event)) {
    *env.out << (env.json ? to_json(event) : format_watch_event(event)) << std::flush;
    if (options.count > 0 && ++seen >= options.count) {
      context->TryCancel();
      break;
    }
  }
  const grpc::Status status = reader->Finish();
  if (options.count > 0 && seen >= options.count) return absl::OkStatus();
  // --timeout is how long to watch, not a failure.
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && env.timeout.has_value()) {
    return absl::OkStatus();
  }
  return internal::from_grpc(env, status);
}

absl::Status run_command(const CommandEnv& env, const HealthOptions& options) {
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(options.service);
  grpc::health::v1::HealthCheckResponse response;
  const absl::Status status =
      unary_call(env, &grpc::health::v1::Health::Stub::Check, request, &response);
  if (!status.ok()) return status;
  const std::string name =
      grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status());
  *env.out << (env.json ? to_json(response) : name + "\n");
  if (response.status() == grpc::health::v1::HealthCheckResponse::SERVING) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(
      options.service.empty() ? "the daemon" : absl::StrCat("service \"", options.service, "\""),
      " is ", name.empty() ? absl::StrCat(static_cast<int>(response.status())) : name));
}

}  // namespace diffusiond::ctl
