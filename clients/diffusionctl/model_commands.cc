// load, unload, ls, available, lease, renew, release: the ModelService commands.
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "diffusiond/v1/model_service.grpc.pb.h"
#include "clients/diffusionctl/commands.h"
#include "clients/diffusionctl/format.h"
#include "clients/diffusionctl/progress.h"

namespace diffusiond::ctl {

using internal::from_grpc;
using internal::new_context;
using internal::unary_call;

absl::Status run_command(const CommandEnv& env, const LoadOptions& options) {
  v1::LoadModelRequest request;
  request.set_path(options.path);
  request.set_model_id(options.model_id);
  request.set_fp8(options.fp8);
  request.set_compute_dtype(options.compute_dtype);
  request.set_config_path(options.config_path);
  auto stub = v1::ModelService::NewStub(env.channel);
  // Without an id the daemon keys the model by its canonical path; the path as given is the client's
  // best routing key.
  std::unique_ptr<grpc::ClientContext> context =
      new_context(env, options.model_id.empty() ? options.path : options.model_id);
  CallCanceller::Scope scope(env.canceller, context.get());
  std::unique_ptr<grpc::ClientReader<v1::LoadModelEvent>> reader =
      stub->LoadModel(context.get(), request);
  LoadProgressPrinter progress(env.err, env.terminal);
  v1::LoadModelEvent event;
  std::optional<v1::ModelInfo> loaded;
  while (reader->Read(&event)) {
    if (event.has_progress()) progress.update(event.progress());
    if (event.has_loaded()) loaded = event.loaded();
  }
  const grpc::Status status = reader->Finish();
  progress.finish();
  if (!status.ok()) return from_grpc(env, status);
  if (!loaded.has_value()) {
    return absl::InternalError("the daemon ended LoadModel without a ModelInfo");
  }
  *env.out << (env.json ? to_json(*loaded) : format_model_info(*loaded));
  return absl::OkStatus();
}

absl::Status run_command(const CommandEnv& env, const UnloadOptions& options) {
  v1::UnloadModelRequest request;
  request.set_model_id(options.model_id);
  request.set_wait(options.wait);
  v1::UnloadModelResponse response;
  const absl::Status status =
      unary_call(env, &v1::ModelService::Stub::UnloadModel, request, &response, options.model_id);
  if (!status.ok()) return status;
  if (env.json) {
    *env.out << to_json(response);
  } else {
    *env.out << "unloaded " << options.model_id << ": freed "
             << short_bytes(response.ram_bytes_freed()) << " RAM";
    if (response.vram_bytes_freed() != 0)
      *env.out << ", " << short_bytes(response.vram_bytes_freed()) << " VRAM";
    *env.out << "\n";
  }
  return absl::OkStatus();
}

absl::Status run_command(const CommandEnv& env, const ListOptions&) {
  v1::ListModelsResponse response;
  const absl::Status status =
      unary_call(env, &v1::ModelService::Stub::ListModels, v1::ListModelsRequest(), &response);
  if (!status.ok()) return status;
  *env.out << (env.json ? to_json(response) : format_models(response.models()));
  return absl::OkStatus();
}

absl::Status run_command(const CommandEnv& env, const AvailableOptions& options) {
  v1::ListAvailableResponse response;
  // Not model-scoped: no routing header.
  const absl::Status status =
      unary_call(env, &v1::ModelService::Stub::ListAvailable, v1::ListAvailableRequest(), &response);
  if (!status.ok()) return status;
  *env.out << (env.json ? to_json(response) : format_available(response, options.all));
  if (response.truncated() && !env.json) {
    *env.err << "diffusionctl: the listing is incomplete: " << response.truncated_reason() << "\n";
  }
  return absl::OkStatus();
}

absl::Status run_command(const CommandEnv& env, const LeaseOptions& options) {
  v1::AcquireLeaseRequest request;
  request.set_model_id(options.model_id);
  request.set_ttl_seconds(absl::ToDoubleSeconds(options.ttl));
  v1::AcquireLeaseResponse response;
  const absl::Status status =
      unary_call(env, &v1::ModelService::Stub::AcquireLease, request, &response, options.model_id);
  if (!status.ok()) return status;
  // Only the id, so that scripts can write `release $(diffusionctl lease m)`.
  *env.out << (env.json ? to_json(response) : absl::StrCat(response.lease_id(), "\n"));
  return absl::OkStatus();
}

absl::Status run_command(const CommandEnv& env, const RenewOptions& options) {
  v1::RenewLeaseRequest request;
  request.set_lease_id(options.lease_id);
  request.set_ttl_seconds(absl::ToDoubleSeconds(options.ttl));
  v1::RenewLeaseResponse response;
  const absl::Status status = unary_call(env, &v1::ModelService::Stub::RenewLease, request, &response, options.model);
  if (!status.ok()) return status;
  *env.out << (env.json ? to_json(response)
                        : absl::StrCat("renewed lease ", options.lease_id, " for ",
                                       absl::FormatDuration(options.ttl), "\n"));
  return absl::OkStatus();
}

absl::Status run_command(const CommandEnv& env, const ReleaseOptions& options) {
  v1::ReleaseLeaseRequest request;
  request.set_lease_id(options.lease_id);
  v1::ReleaseLeaseResponse response;
  const absl::Status status = unary_call(env, &v1::ModelService::Stub::ReleaseLease, request, &response, options.model);
  if (!status.ok()) return status;
  *env.out << (env.json ? to_json(response)
                        : absl::StrCat("released lease ", options.lease_id, "\n"));
  return absl::OkStatus();
}

}  // namespace diffusiond::ctl
