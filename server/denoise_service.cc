#include "server/denoise_service.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/cancellable_reactor.h"
#include "server/event_stream.h"
#include "server/grpc_status.h"
#include "server/request_checks.h"
#include "server/request_options.h"
#include "server/wire_tensor.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

// Cancelled by the client, its deadline, or the drain.
bool is_cancellation(const absl::Status& s) { return absl::IsCancelled(s) || absl::IsUnavailable(s); }

}  // namespace

absl::StatusOr<EngineDenoiseRequest> denoise_request(const v1::DenoiseRequest& wire) {
  DIFFUSIOND_RETURN_IF_ERROR(check_denoise_request(wire));
  EngineDenoiseRequest r;
  r.model = ModelHandle::by_id(wire.model_id());
  DIFFUSIOND_ASSIGN_OR_RETURN(r.positive, from_wire(wire.conditioning(), "conditioning"));
  if (wire.has_negative()) {
    DIFFUSIOND_ASSIGN_OR_RETURN(r.negative, from_wire(wire.negative(), "negative conditioning"));
  }
  if (wire.has_initial_latents()) {
    DIFFUSIOND_ASSIGN_OR_RETURN(r.initial_latents, from_wire(wire.initial_latents(), "initial_latents"));
  }
  r.latent_shape.assign(wire.latent_shape().begin(), wire.latent_shape().end());
  r.seed = wire.seed();
  r.guidance_scale = wire.guidance_scale();
  r.steps = wire.steps() == 0 ? kDefaultDenoiseSteps : wire.steps();
  r.shift = wire.shift();  // 0: the engine uses the model's default
  r.sigmas.assign(wire.sigmas().begin(), wire.sigmas().end());
  if (!wire.expert_2().empty()) {
    r.later_segments.push_back({wire.expert_2(), wire.boundary_ratio(), wire.guidance_scale_2()});
  }
  for (const v1::DenoiseSegment& s : wire.later_segments()) {
    r.later_segments.push_back({s.model_id(), s.boundary_ratio(), s.guidance_scale()});
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(r.adapters, adapters_from_wire(wire.adapters()));
  return r;
}

grpc::ServerUnaryReactor* DenoiseServiceImpl::Step(grpc::CallbackServerContext*,
                                                   const v1::StepRequest* request, v1::StepResponse* response) {
  auto* reactor = new CancellableUnaryReactor();
  absl::StatusOr<NamedTensors> inputs = from_wire(request->inputs());
  absl::StatusOr<std::vector<AdapterRequest>> adapters = adapters_from_wire(request->adapters());
  if (!inputs.ok() || !adapters.ok()) {
    reactor->Finish(to_grpc_status(!inputs.ok() ? inputs.status() : adapters.status()));
    return reactor;
  }
  const ServiceDeps deps = deps_;
  absl::Status queued = deps.compute_queue->submit(
      [deps, reactor, response, id = request->model_id(), inputs = *std::move(inputs),
       adapters = *std::move(adapters)] {
        const CancellationToken cancel = reactor->token();
        if (cancel.cancelled()) {
          deps.metrics->count_cancellation("step");
          reactor->Finish(to_grpc_status(absl::CancelledError("the call was cancelled before it ran")));
          return;
        }
        const absl::Time start = absl::Now();
        absl::StatusOr<NamedTensors> outputs = deps.engine->step(id, inputs, cancel, adapters);
        absl::Status status = outputs.status();
        if (outputs.ok()) {
          deps.metrics->observe_step(id, absl::Now() - start);
          for (const auto& [name, tensor] : *outputs) {
            v1::NamedTensor* out = response->add_outputs();
            out->set_name(name);
            status.Update(to_wire(tensor, out->mutable_tensor()));
          }
        }
        reactor->Finish(to_grpc_status(status));
      });
  if (!queued.ok()) {
    deps.metrics->count_queue_rejection("compute");
    reactor->Finish(to_grpc_status(queued));
  }
  return reactor;
}

grpc::ServerWriteReactor<v1::DenoiseEvent>* DenoiseServiceImpl::Denoise(grpc::CallbackServerContext*,
                                                                        const v1::DenoiseRequest* wire) {
  auto* stream = new EventStream<v1::DenoiseEvent>();
  absl::StatusOr<EngineDenoiseRequest> request = denoise_request(*wire);
  if (!request.ok()) {
    stream->finish(to_grpc_status(request.status()));
    return stream;
  }
  const ServiceDeps deps = deps_;
  absl::Status queued = deps.compute_queue->submit([deps, stream, request = *std::move(request)]() mutable {
    const absl::Time start = absl::Now();
    // What readying the segment now running did, for its first step's event.
    SegmentStart segment;
    request.on_segment = [&](const SegmentStart& s) { segment = s; };
    DenoiseOptions options;
    options.cancel = stream->token();
    options.on_step = [&](const StepEvent& e) {
      const std::string& model_id = segment.model_id;
      deps.metrics->observe_step(model_id, e.step_time);
      v1::DenoiseEvent event;
      v1::DenoiseStep* step = event.mutable_step();
      step->set_model_id(model_id);
      step->set_step(e.step);
      step->set_steps(e.steps);
      step->set_sigma(e.sigma);
      step->set_step_seconds(absl::ToDoubleSeconds(e.step_time));
      if (segment.began_with(e)) {
        for (const std::string& key : segment.evicted) step->add_evicted_model_ids(key);
        for (const std::string& key : segment.adapters_loaded) step->add_adapters_loaded(key);
        for (const std::string& note : segment.adapter_notes) step->add_adapter_notes(note);
        step->set_model_loaded(segment.loaded);
        if (segment.loaded) step->set_load_seconds(absl::ToDoubleSeconds(segment.load_time));
      }
      stream->send(std::move(event));
    };
    absl::StatusOr<torch::Tensor> latents = deps.engine->denoise(request, options);
    absl::Status status = latents.status();
    if (latents.ok()) {
      v1::DenoiseEvent event;
      status = to_wire(*latents, event.mutable_latents());
      if (status.ok()) stream->send(std::move(event));
    }
    const bool cancelled = is_cancellation(status) || stream->cancelled();
    if (cancelled) deps.metrics->count_cancellation("denoise");
    // Model labels only for models that exist: a client naming arbitrary
    // ids must not grow the series without bound.
    if (!absl::IsNotFound(status) && !absl::IsUnavailable(status)) {
      deps.metrics->observe_denoise(request.model.id(), status.ok() ? "ok" : cancelled ? "cancelled" : "error",
                                    absl::Now() - start);
    }
    stream->finish(to_grpc_status(status));
  });
  if (!queued.ok()) {
    deps.metrics->count_queue_rejection("compute");
    stream->finish(to_grpc_status(queued));
  }
  return stream;
}

}  // namespace diffusiond
