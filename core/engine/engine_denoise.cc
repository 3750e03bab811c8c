// Engine::denoise: one loop (one DenoiseRun, one solver state) over one or
// more segments, each run by its own model: Wan 2.2's high-noise expert and
// then its low-noise one. Each segment's model is pinned with one step's
// activations reserved only while its own steps run, and the model before
// it is let go before the next is readied, so a budget for one model
// serves both: loading the second may evict the first.
#include "absl/strings/str_cat.h"
#include "core/engine/engine.h"
#include "core/engine/internal/call_scope.h"
#include "core/engine/denoise_segments.h"
#include "core/engine/step_admission.h"
#include "core/util/bounded_text.h"
#include "core/util/exception_status.h"
#include "core/util/status_macros.h"

namespace diffusiond {

// Member order is teardown order: the predictor (which points into the
// model) goes before the call that keeps the model, and the adapter set
// before the adapters it views and the model it was built for.
struct Engine::SegmentModel {
  CallScope call;
  AdmittedAdapters adapters;
  std::unique_ptr<AdapterSet> adapter_set;  // null without adapters
  const DiffusionModel* model = nullptr;
  FlowPredictor predict;
};

namespace {

std::vector<int64_t> latent_shape_of(const EngineDenoiseRequest& request) {
  if (request.from_image.has_value() && request.from_image->clean.defined()) {
    return request.from_image->clean.sizes().vec();
  }
  return request.initial_latents.defined() ? request.initial_latents.sizes().vec() : request.latent_shape;
}

// The guidance scale of segment `k` (0: the request's model).
double guidance_of(const EngineDenoiseRequest& request, size_t k) {
  if (k == 0) return request.guidance_scale;
  const double own = request.later_segments[k - 1].guidance_scale;
  return own > 0 ? own : request.guidance_scale;
}

}  // namespace

absl::StatusOr<Engine::SegmentModel> Engine::ready_segment(const ModelHandle& handle,
                                                           const EngineDenoiseRequest& request, double guidance_scale,
                                                           const Job& job, SegmentStart& start) {
  const std::string& model_id = handle.id();
  const std::vector<int64_t> shape = latent_shape_of(request);
  const Conditioning* negative = request.negative.has_value() ? &*request.negative : nullptr;
  // The request against the model, before any room is waited for, and
  // again against the model admitted. The shape is checked before the
  // noise is drawn: a client must not make the daemon allocate a latent the
  // model could never denoise.
  const auto denoiser_of = [&](const Model& m) -> absl::StatusOr<const DiffusionModel*> {
    const auto* d = dynamic_cast<const DiffusionModel*>(&m);
    if (d == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("model \"", bounded(model_id), "\" is a ", model_role_name(m.role()), ", not a denoiser"));
    }
    DIFFUSIOND_RETURN_IF_ERROR(check_latent_shape(d->latent_layout(), shape, model_id));
    if (negative != nullptr && !d->supports_negative()) {
      return absl::InvalidArgumentError(
          absl::StrCat("model \"", bounded(model_id), "\" (", d->architecture(), ") takes no negative conditioning"));
    }
    return d;
  };
  start.model_id = model_id;
  // The adapters first, checked and pinned, so a bad one costs no load or
  // activation room; then the model beside them, with the room their terms
  // work in.
  AdapterReport adapter_report;
  absl::StatusOr<AdmittedAdapters> adapters = admit_adapters_for(handle, request.adapters, job, &adapter_report,
                                                                   request.adapters_applied_to_encoders);
  start.evicted.insert(start.evicted.end(), adapter_report.evicted.begin(), adapter_report.evicted.end());
  start.adapters_loaded = std::move(adapter_report.loaded);
  start.adapter_notes = std::move(adapter_report.notes);
  if (!adapters.ok()) return adapters.status();
  // Held until its steps end, where the forwards run (step_admission.h).
  CallNeeds needs;
  needs.cpu_room = [&](const Model& m) -> absl::StatusOr<CallRoom> {
    DIFFUSIOND_ASSIGN_OR_RETURN(const DiffusionModel* d, denoiser_of(m));
    CallRoom room = activation_room(
        *d, denoise_activation_query(*d, shape, guidance_scale, request.positive, negative), model_id);
    room.bytes = with_adapter_working_memory(room.bytes, *adapters);
    return room;
  };
  needs.device_bytes = [&](const Model& m) -> absl::StatusOr<int64_t> {
    DIFFUSIOND_ASSIGN_OR_RETURN(const DiffusionModel* d, denoiser_of(m));
    ActivationQuery query = denoise_activation_query(*d, shape, guidance_scale, request.positive, negative);
    query.device_is_cpu = false;
    return with_adapter_working_memory(d->estimate_activations(query).bytes, *adapters);
  };
  CallReport report;
  absl::StatusOr<CallScope> call = admit_call(handle, needs, job, &report);
  start.evicted.insert(start.evicted.end(), report.evicted.begin(), report.evicted.end());
  start.where = std::move(report.where);
  start.loaded = start.loaded || report.reloaded;
  if (!call.ok()) return call.status();
  DIFFUSIOND_ASSIGN_OR_RETURN(const DiffusionModel* model, denoiser_of(call->model()));
  DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<AdapterSet> set, adapter_set_for(call->model(), *adapters));
  DIFFUSIOND_ASSIGN_OR_RETURN(FlowPredictor predict, model->flow_predictor(request.positive, negative));
  return SegmentModel{*std::move(call), *std::move(adapters), std::move(set), model, std::move(predict)};
}

absl::StatusOr<torch::Tensor> Engine::denoise(const EngineDenoiseRequest& request, const DenoiseOptions& options) {
  Job job(&gate_, options.cancel);
  DIFFUSIOND_RETURN_IF_ERROR(job.status());
  SegmentStart start;
  std::optional<SegmentModel> current;
  {
    const absl::Time readying = clock_->now();
    DIFFUSIOND_ASSIGN_OR_RETURN(SegmentModel readied,
                                ready_segment(request.model, request, request.guidance_scale, job, start));
    if (start.loaded) start.load_time = clock_->now() - readying;
    current.emplace(std::move(readied));
  }
  const DiffusionModel& model = *current->model;
  const FlowConvention convention = model.flow_convention();
  const std::string architecture(model.architecture());
  DIFFUSIOND_RETURN_IF_ERROR(check_later_segments(*this, request, model));

  DenoiseRequest loop;
  loop.initial_latents = request.initial_latents;
  loop.latent_shape = request.latent_shape;
  loop.seed = request.seed;
  loop.has_negative = request.negative.has_value();
  loop.from_image = request.from_image;
  loop.schedule = model.default_schedule(latent_shape_of(request));
  loop.schedule.steps = request.steps;
  loop.schedule.sigmas = request.sigmas;
  loop.schedule.base_sigmas = request.base_sigmas;
  if (request.shift != 0) {
    loop.schedule.shift = request.shift;
    loop.schedule.dynamic_shift = false;
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(DenoiseRun run, status_of("the denoise loop", [&]() -> absl::StatusOr<DenoiseRun> {
                                return DenoiseRun::start(convention, loop);
                              }));
  // The steps each segment runs: [begin[k], begin[k + 1]).
  const size_t segments = request.later_segments.size() + 1;
  std::vector<int> begin(segments + 1, run.schedule().steps());
  begin[0] = run.steps_done();  // an image's run starts later in the schedule
  for (size_t k = 1; k < segments; ++k) {
    const float boundary = static_cast<float>(request.later_segments[k - 1].boundary_ratio * 1000.0);
    begin[k] = first_step_below(run.schedule(), boundary, begin[k - 1]);
  }

  // The caller and the drain stop the loop before its next step, and the
  // forward in progress before its next block.
  DenoiseOptions stoppable = options;
  stoppable.cancel = job.token();
  if (stoppable.clock == nullptr) stoppable.clock = clock_;
  for (size_t k = 0; k < segments; ++k) {
    if (begin[k] == begin[k + 1]) continue;  // no steps: never readied
    if (k > 0) {
      // The model before is let go first, its pin, its activations and its
      // placement, so that readying this one may evict it.
      current.reset();
      start = SegmentStart();
      const absl::Time readying = clock_->now();
      // Readied when its turn comes: loaded if it is not cached, which may
      // evict the model before it.
      LoadWatcher watcher;
      watcher.cancel = job.token();
      watcher.on_progress = [&start](const LoadProgress& p) {
        start.evicted.insert(start.evicted.end(), p.evicted.begin(), p.evicted.end());
      };
      const DenoiseSegment& segment = request.later_segments[k - 1];
      ModelLoadRequest named;
      named.path = segment.model;
      named.fp8 = segment.fp8;
      named.compute_dtype = segment.compute_dtype;
      DIFFUSIOND_ASSIGN_OR_RETURN(const ModelHandle next, ready(named, ModelRole::kDenoiser, watcher));
      const std::string& id = next.id();
      start.loaded = next.loaded();
      DIFFUSIOND_ASSIGN_OR_RETURN(SegmentModel readied,
                                  ready_segment(next, request, guidance_of(request, k), job, start));
      if (start.loaded) start.load_time = clock_->now() - readying;
      if (readied.model->architecture() != architecture) {  // the path now holds another model
        return absl::FailedPreconditionError(absl::StrCat("segment ", k, "'s model \"", bounded(id), "\" is ",
                                                          readied.model->architecture(), ", not ", architecture));
      }
      current.emplace(std::move(readied));
    }
    start.segment = static_cast<int>(k);
    start.first_step = begin[k] - begin[0];
    if (request.on_segment) request.on_segment(start);
    DIFFUSIOND_RETURN_IF_ERROR(current->call.run("the denoise loop", [&]() -> absl::Status {
      return run_with_adapters(current->adapter_set.get(), [&] {
        return run.run(current->predict, guidance_of(request, k), begin[k + 1], static_cast<int>(k), stoppable);
      });
    }));
  }
  return std::move(run).finish().latents;
}

}  // namespace diffusiond
