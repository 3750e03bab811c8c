// Engine::denoise: the loop over one denoiser, or over Wan 2.2's two
// experts, each pinned with one step's activations reserved while its own
// steps run. At the boundary the first expert is let go before the second
// is readied, so a budget for one model serves both: loading the second
// may evict the first.
#include "absl/strings/str_cat.h"
#include "core/engine/engine.h"
#include "core/engine/internal/engine_job.h"
#include "core/engine/step_admission.h"
#include "core/memory/activation_arena_scope.h"
#include "core/util/bounded_text.h"
#include "core/util/cancellation_scope.h"
#include "core/util/exception_status.h"
#include "core/util/status_macros.h"
#include "core/vram/device_placement.h"

namespace diffusiond {

// Member order is teardown order: the predictor (which points into the
// model) goes before the device run and the pin that keep the model.
struct Engine::DenoiseExpert {
  std::string model_id;
  Pin pinned;
  Reservation activations;
  std::optional<DeviceRun> on_device;
  const DiffusionModel* model = nullptr;
  FlowPredictor predict;
};

absl::StatusOr<Engine::DenoiseExpert> Engine::ready_expert(const std::string& model_id,
                                                           const EngineDenoiseRequest& request,
                                                           const DenoiseRequest& loop, const Job& job,
                                                           std::vector<std::string>* evicted, CallDevice* where) {
  const std::vector<int64_t> shape =
      loop.initial_latents.defined() ? loop.initial_latents.sizes().vec() : loop.latent_shape;
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
  DenoiseExpert expert;
  expert.model_id = model_id;
  // Held until its steps end, where the forwards run (step_admission.h).
  // On the CPU a request the model refuses is refused by the room's
  // function, before any wait for room.
  if (vram_ != nullptr) {
    DIFFUSIOND_ASSIGN_OR_RETURN(expert.pinned, pin(model_id));
  } else {
    DIFFUSIOND_ASSIGN_OR_RETURN(PinnedRoom room,
                                pin_with_room(
                                    model_id,
                                    [&](const Model& m) -> absl::StatusOr<CallRoom> {
                                      DIFFUSIOND_ASSIGN_OR_RETURN(const DiffusionModel* d, denoiser_of(m));
                                      return activation_room(
                                          *d, denoise_activation_query(*d, loop, request.positive, negative), model_id);
                                    },
                                    job, evicted));
    expert.pinned = std::move(room.pin);
    expert.activations = std::move(room.reservation);
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(expert.model, denoiser_of(expert.pinned.as<LoadedModel>()->model()));
  DIFFUSIOND_ASSIGN_OR_RETURN(expert.predict, expert.model->flow_predictor(request.positive, negative));
  if (vram_ != nullptr) {
    ActivationQuery query = denoise_activation_query(*expert.model, loop, request.positive, negative);
    query.device_is_cpu = false;
    DIFFUSIOND_ASSIGN_OR_RETURN(
        expert.on_device,
        prepare_device(model_id, *expert.model, expert.model->estimate_activations(query).bytes, where));
  }
  return expert;
}

absl::Status Engine::check_second_expert(const EngineDenoiseRequest& request, const DiffusionModel& first) {
  if (!(request.boundary_ratio > 0 && request.boundary_ratio <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("boundary_ratio must be in (0, 1] with a second expert, got ", request.boundary_ratio));
  }
  // Described, not loaded: a cached model by its id, else the checkpoint
  // the path names, from its headers and config.
  ModelInfo info;
  bool cached = false;
  for (ModelInfo& m : list()) {
    if (m.model_id == request.expert_2) {
      info = std::move(m);
      cached = true;
    }
  }
  if (!cached) {
    ModelLoadRequest load;
    load.path = request.expert_2;
    DIFFUSIOND_ASSIGN_OR_RETURN(info, inspect(load));
  }
  if (info.architecture != first.architecture()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the second expert \"", bounded(request.expert_2), "\" is ", info.architecture, ", but model \"",
        bounded(request.model_id), "\" is ", first.architecture(), ": both experts must be one architecture"));
  }
  return absl::OkStatus();
}

absl::StatusOr<torch::Tensor> Engine::denoise(const EngineDenoiseRequest& request, const DenoiseOptions& options) {
  Job job(this, options.cancel);
  DIFFUSIOND_RETURN_IF_ERROR(admit(job));
  DenoiseRequest loop = request.loop;
  const bool two_experts = !request.expert_2.empty();
  std::optional<DenoiseExpert> first, second;
  // What each expert's first step reports: the models evicted to make room
  // for it, and whether it was loaded for this call.
  struct Readied {
    std::vector<std::string> evicted;
    bool loaded = false;
    bool reported = false;
  };
  Readied readied_for[2];
  {
    DIFFUSIOND_ASSIGN_OR_RETURN(DenoiseExpert readied, ready_expert(request.model_id, request, loop, job,
                                                                    &readied_for[0].evicted, request.where));
    first.emplace(std::move(readied));
    if (request.evicted != nullptr) {
      request.evicted->insert(request.evicted->end(), readied_for[0].evicted.begin(), readied_for[0].evicted.end());
    }
  }
  const DiffusionModel& model = *first->model;
  const FlowConvention convention = model.flow_convention();
  const std::string architecture(model.architecture());
  if (two_experts) DIFFUSIOND_RETURN_IF_ERROR(check_second_expert(request, model));
  const std::vector<int64_t> shape =
      loop.initial_latents.defined() ? loop.initial_latents.sizes().vec() : loop.latent_shape;
  ScheduleOptions schedule = model.default_schedule(shape);
  schedule.steps = loop.schedule.steps;
  schedule.sigmas = loop.schedule.sigmas;
  if (loop.schedule.shift != 0) {
    schedule.shift = loop.schedule.shift;
    schedule.dynamic_shift = false;
  }
  loop.schedule = schedule;
  loop.has_negative = request.negative.has_value();
  if (two_experts) loop.expert_boundary = static_cast<float>(request.boundary_ratio * 1000.0);
  // The caller and the drain stop the loop before its next step, and the
  // forward in progress before its next block.
  DenoiseOptions stoppable = options;
  stoppable.cancel = job.token();
  if (stoppable.clock == nullptr) stoppable.clock = clock_;
  std::optional<DeviceForward> source;
  if (first->on_device.has_value()) source.emplace(*first->on_device->placement.as<DevicePlacement>());
  const FlowPredictor first_predict = first->predict;
  // Sized by the first expert's step; a second expert of the same
  // architecture admits the same bytes for the same latents.
  ActivationArenaScope arena(first->activations.reserved_bytes());
  if (two_experts) {
    stoppable.second_expert = [&]() -> absl::StatusOr<FlowPredictor> {
      // The first expert is let go before the second is readied: its pin,
      // its activations and its placement, so that loading the second may
      // evict it.
      source.reset();
      first.reset();
      arena.release_free_pages();  // what the first's reservation stood for
      std::string id = request.expert_2;
      if (absl::StatusOr<Pin> cached = cache_->get(id); !cached.ok()) {
        ModelLoadRequest load;
        load.path = request.expert_2;
        LoadWatcher watcher;
        watcher.cancel = job.token();
        watcher.on_progress = [&readied_for](const LoadProgress& p) {
          readied_for[1].evicted.insert(readied_for[1].evicted.end(), p.evicted.begin(), p.evicted.end());
        };
        DIFFUSIOND_ASSIGN_OR_RETURN(const ModelInfo loaded, this->load(load, watcher));
        id = loaded.model_id;
        readied_for[1].loaded = true;
      }
      DenoiseRequest expert_loop = loop;
      expert_loop.guidance_scale = loop.guidance_scale_2 > 0 ? loop.guidance_scale_2 : loop.guidance_scale;
      DIFFUSIOND_ASSIGN_OR_RETURN(DenoiseExpert readied,
                                  ready_expert(id, request, expert_loop, job, &readied_for[1].evicted));
      if (readied.model->architecture() != architecture) {  // the path now holds another model
        return absl::FailedPreconditionError(absl::StrCat("the second expert \"", bounded(id), "\" is ",
                                                          readied.model->architecture(), ", not ", architecture));
      }
      second.emplace(std::move(readied));
      if (second->on_device.has_value()) source.emplace(*second->on_device->placement.as<DevicePlacement>());
      return second->predict;
    };
  }
  if (options.on_step) {
    stoppable.on_step = [&readied_for, &on_step = options.on_step](const StepEvent& e) {
      Readied& r = readied_for[e.expert == 0 ? 0 : 1];
      if (r.reported) return on_step(e);
      r.reported = true;
      StepEvent first_of_expert = e;
      first_of_expert.evicted = std::move(r.evicted);
      first_of_expert.loaded = r.loaded;
      on_step(first_of_expert);
    };
  }
  CancellationScope scope(job.token());
  return status_of("the denoise loop", [&]() -> absl::StatusOr<torch::Tensor> {
    DIFFUSIOND_ASSIGN_OR_RETURN(DenoiseResult result, diffusiond::denoise(first_predict, convention, loop, stoppable));
    return std::move(result.latents);
  });
}

}  // namespace diffusiond
