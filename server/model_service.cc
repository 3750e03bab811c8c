#include "server/model_service.h"

#include "core/util/status_macros.h"
#include "server/available_model_wire.h"
#include "server/cancellable_reactor.h"
#include "server/event_stream.h"
#include "server/grpc_status.h"
#include "server/model_info_wire.h"
#include "server/request_options.h"

namespace diffusiond {
namespace {

grpc::ServerUnaryReactor* finish_now(grpc::CallbackServerContext* context, const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(to_grpc_status(status));
  return reactor;
}

absl::StatusOr<ModelLoadRequest> load_request(const v1::LoadModelRequest& wire) {
  ModelLoadRequest r;
  r.path = wire.path();
  r.model_id = wire.model_id();
  r.config_path = wire.config_path();
  DIFFUSIOND_ASSIGN_OR_RETURN(r.fp8, fp8_from_wire(wire.fp8()));
  DIFFUSIOND_ASSIGN_OR_RETURN(r.compute_dtype, compute_dtype_from_wire(wire.compute_dtype()));
  return r;
}

}  // namespace

grpc::ServerWriteReactor<v1::LoadModelEvent>* ModelServiceImpl::LoadModel(grpc::CallbackServerContext*,
                                                                          const v1::LoadModelRequest* wire) {
  auto* stream = new EventStream<v1::LoadModelEvent>();
  absl::StatusOr<ModelLoadRequest> request = load_request(*wire);
  if (!request.ok()) {
    stream->finish(to_grpc_status(request.status()));
    return stream;
  }
  // A model already cached answers at once, without queueing behind loads.
  if (absl::StatusOr<ModelInfo> hit = deps_.engine->find(*request); !absl::IsNotFound(hit.status())) {
    if (hit.ok()) {
      v1::LoadModelEvent event;
      to_wire(*hit, event.mutable_loaded());
      stream->send(std::move(event));
    }
    stream->finish(to_grpc_status(hit.status()));
    return stream;
  }
  const ServiceDeps deps = deps_;
  absl::Status queued = deps.load_queue->submit([deps, stream, request = *std::move(request)] {
    LoadWatcher watcher;
    watcher.on_progress = [stream](const LoadProgress& p) {
      v1::LoadModelEvent event;
      to_wire(p, event.mutable_progress());
      stream->send(std::move(event), /*replaceable=*/true);
    };
    watcher.cancel = stream->token();
    absl::StatusOr<ModelInfo> info = stream->cancelled()
                                         ? absl::CancelledError("the call was cancelled before the load started")
                                         : deps.engine->load(request, watcher);
    if (info.ok()) {
      v1::LoadModelEvent event;
      to_wire(*info, event.mutable_loaded());
      stream->send(std::move(event));
    } else if (absl::IsCancelled(info.status()) || stream->cancelled() ||
               (absl::IsUnavailable(info.status()) && deps.engine->draining())) {
      deps.metrics->count_cancellation("load");
    }
    stream->finish(to_grpc_status(info.status()));
  });
  if (!queued.ok()) {
    deps.metrics->count_queue_rejection("load");
    stream->finish(to_grpc_status(queued));
  }
  return stream;
}

grpc::ServerUnaryReactor* ModelServiceImpl::UnloadModel(grpc::CallbackServerContext* context,
                                                        const v1::UnloadModelRequest* request,
                                                        v1::UnloadModelResponse* response) {
  auto* reactor = new CancellableUnaryReactor();
  UnloadOptions options;
  options.wait = request->wait();
  options.timeout = time_left(*context);
  // The client giving up wakes the waiting unload at once.
  options.cancel = reactor->token();
  const ServiceDeps deps = deps_;
  absl::Status queued = deps.admin_queue->submit([deps, reactor, response, options, id = request->model_id()] {
    absl::StatusOr<UnloadResult> r = deps.engine->unload(id, options);
    if (r.ok()) {
      response->set_ram_bytes_freed(r->freed_bytes[kCpuIndex]);
      response->set_vram_bytes_freed(r->freed_bytes[kCudaIndex]);
    }
    reactor->Finish(to_grpc_status(r.status()));
  });
  if (!queued.ok()) reactor->Finish(to_grpc_status(queued));
  return reactor;
}

grpc::ServerUnaryReactor* ModelServiceImpl::ListModels(grpc::CallbackServerContext* context,
                                                       const v1::ListModelsRequest*,
                                                       v1::ListModelsResponse* response) {
  for (const ModelInfo& info : deps_.engine->list()) to_wire(info, response->add_models());
  return finish_now(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* ModelServiceImpl::AcquireLease(grpc::CallbackServerContext* context,
                                                         const v1::AcquireLeaseRequest* request,
                                                         v1::AcquireLeaseResponse* response) {
  absl::StatusOr<absl::Duration> ttl = lease_ttl_from_wire(request->ttl_seconds());
  if (!ttl.ok()) return finish_now(context, ttl.status());
  absl::StatusOr<LeaseId> lease = deps_.engine->acquire_lease(request->model_id(), *ttl);
  if (lease.ok()) response->set_lease_id(*lease);
  return finish_now(context, lease.status());
}

grpc::ServerUnaryReactor* ModelServiceImpl::RenewLease(grpc::CallbackServerContext* context,
                                                       const v1::RenewLeaseRequest* request,
                                                       v1::RenewLeaseResponse*) {
  absl::StatusOr<absl::Duration> ttl = lease_ttl_from_wire(request->ttl_seconds());
  if (!ttl.ok()) return finish_now(context, ttl.status());
  return finish_now(context, deps_.engine->renew_lease(request->lease_id(), *ttl));
}

grpc::ServerUnaryReactor* ModelServiceImpl::ReleaseLease(grpc::CallbackServerContext* context,
                                                         const v1::ReleaseLeaseRequest* request,
                                                         v1::ReleaseLeaseResponse*) {
  return finish_now(context, deps_.engine->release_lease(request->lease_id()));
}

grpc::ServerUnaryReactor* ModelServiceImpl::ListAvailable(grpc::CallbackServerContext* context,
                                                          const v1::ListAvailableRequest*,
                                                          v1::ListAvailableResponse* response) {
  if (deps_.catalog == nullptr)
    return finish_now(context, absl::UnimplementedError("this server lists no models directory"));
  auto* reactor = new CancellableUnaryReactor();
  const ServiceDeps deps = deps_;
  // The first listing plans every candidate (headers and configs: file I/O),
  // so it leaves gRPC's thread.
  absl::Status queued = deps.admin_queue->submit([deps, reactor, response] {
    absl::StatusOr<CatalogListing> listing = deps.catalog->list();
    if (listing.ok()) to_wire(*listing, deps.catalog->compute_dtype(), response);
    reactor->Finish(to_grpc_status(listing.status()));
  });
  if (!queued.ok()) {
    deps.metrics->count_queue_rejection("unload");
    reactor->Finish(to_grpc_status(queued));
  }
  return reactor;
}

}  // namespace diffusiond
