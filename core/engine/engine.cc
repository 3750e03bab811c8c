#include "core/engine/engine.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "core/engine/internal/call_scope.h"
#include "core/engine/model_admission.h"
#include "core/engine/step_admission.h"
#include "core/util/bounded_text.h"
#include "core/util/exception_status.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

// Cache operations that fail because an entry is being unloaded say ABORTED
// (retry later); for a remote caller that is the model not being there.
absl::Status not_loaded(const std::string& model_id, const absl::Status& status) {
  if (absl::IsNotFound(status) || absl::IsAborted(status)) {
    return absl::NotFoundError(absl::StrCat("model \"", bounded(model_id), "\" is not loaded; load it first"));
  }
  return status;
}

// A model as the API describes it, before its usage figures are known.
ModelInfo info_of(const std::string& model_id, const ModelDescription& description) {
  ModelInfo info;
  static_cast<ModelDescription&>(info) = description;
  info.model_id = model_id;
  return info;
}

// Why a load past EngineOptions::load_timeout stopped.
absl::Status load_timed_out(const std::string& model_id, absl::Duration timeout) {
  return absl::DeadlineExceededError(absl::StrCat("model \"", bounded(model_id),
                                                  "\" did not load within the load timeout (",
                                                  absl::FormatDuration(timeout), "); the load was cancelled"));
}

// Copies the cache's usage figures for one entry into `info`.
void set_usage(const CacheEntryStats& e, ModelInfo* info) {
  info->bytes = e.bytes;
  info->pins = e.pins;
  info->leases = e.leases;
  info->idle = e.idle_age;
}

}  // namespace

Engine::Engine(const EngineOptions& options)
    : options_(options),
      clock_(options.clock != nullptr ? options.clock : real_clock()),
      gate_(clock_, absl::UnavailableError("the daemon is shutting down; retry on another replica")),
      loads_({options.models_dir, options.fp8, options.compute_dtype, options.keep_narrow_weights,
              options.file_opener}) {}

Engine::~Engine() = default;

absl::StatusOr<std::unique_ptr<Engine>> Engine::create(const EngineOptions& options) {
  std::error_code ec;
  if (!std::filesystem::is_directory(options.models_dir, ec)) {
    return absl::FailedPreconditionError(
        absl::StrCat("models directory \"", options.models_dir, "\" does not exist or is not a directory"));
  }
  if ((options.device == nullptr) != (options.vram_budget == nullptr)) {
    return absl::InvalidArgumentError("a device and a VRAM budget go together");
  }
  std::unique_ptr<Engine> engine(new Engine(options));
  ModelCacheOptions co;
  co.ram_budget = options.ram_budget;
  co.clock = options.clock;
  co.observer = options.observer;
  co.max_room_wait = options.max_room_wait;
  if (options.device != nullptr) {
    DevicePlacerOptions po;
    po.device = options.device;
    po.vram_budget = options.vram_budget;
    po.observer = options.vram_observer;
    po.clock = options.clock;
    po.fp8_matmul = options.fp8_matmul;
    po.fp8_fast_accum = options.fp8_fast_accum;
    po.note = options.note;
    DIFFUSIOND_ASSIGN_OR_RETURN(engine->device_, DevicePlacer::create(po));
    engine->dropper_ = engine->device_->placement_dropper(options.observer);
    co.observer = engine->dropper_.get();
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(engine->cache_, ModelCache::create(co));
  return engine;
}

absl::StatusOr<Pin> Engine::pin(const std::string& model_id) {
  absl::StatusOr<Pin> pin = cache_->get(model_id);
  if (!pin.ok()) return not_loaded(model_id, pin.status());
  return pin;
}

absl::StatusOr<PinnedRoom> Engine::pin_with_room(const std::string& model_id,
                                                 const std::function<absl::StatusOr<CallRoom>(const Model&)>& room_of,
                                                 const Job& job, std::vector<std::string>* evicted, bool wait) {
  absl::StatusOr<PinnedRoom> room = diffusiond::pin_with_room(*cache_, model_id, room_of, evicted, {wait, job.token()});
  if (!room.ok()) return not_loaded(model_id, room.status());
  return room;
}

absl::StatusOr<ModelInfo> Engine::find(const ModelLoadRequest& request) {
  Job job(&gate_);
  DIFFUSIOND_RETURN_IF_ERROR(job.status());
  DIFFUSIOND_ASSIGN_OR_RETURN(const ResolvedLoad load, loads_.resolve(request));
  absl::StatusOr<Pin> pinned = cache_->get(load.model_id);
  if (!pinned.ok()) return absl::NotFoundError(absl::StrCat("model \"", bounded(load.model_id), "\" is not cached"));
  return answer(load, *std::move(pinned));
}

absl::StatusOr<ModelInfo> Engine::inspect(const ModelLoadRequest& request) {
  DIFFUSIOND_ASSIGN_OR_RETURN(const ResolvedLoad load, loads_.resolve(request));
  if (absl::StatusOr<Pin> pinned = cache_->get(load.model_id); pinned.ok()) return answer(load, *std::move(pinned));
  return loads_.describe(load);
}

absl::StatusOr<CallFloor> Engine::least_call_room(const ModelLoadRequest& model, const ActivationQuery& query) {
  // On a device every role's activations are VRAM's (device_placer.h).
  const bool on_device = device_ != nullptr;
  const auto loaded = [&](const std::string& model_id, const Pin& pinned) {
    const auto* model = pinned.as<LoadedModel>();
    CallFloor floor{0, least_call_bytes(model->recipe(), model->description().compute_dtype, query, on_device)};
    for (const CacheEntryStats& e : cache_->stats().entries) {
      if (e.key == model_id) floor.weights = e.bytes[kCpuIndex];
    }
    return floor;
  };
  if (absl::StatusOr<Pin> pinned = cache_->get(model.path); pinned.ok()) return loaded(model.path, *pinned);
  DIFFUSIOND_ASSIGN_OR_RETURN(const ResolvedLoad load, loads_.resolve(model));
  if (absl::StatusOr<Pin> pinned = cache_->get(load.model_id); pinned.ok()) return loaded(load.model_id, *pinned);
  return loads_.least_call_room(load, query, on_device);
}

absl::StatusOr<ModelInfo> Engine::load(const ModelLoadRequest& request, const LoadWatcher& watcher) {
  Job job(&gate_);
  DIFFUSIOND_RETURN_IF_ERROR(job.status());
  DIFFUSIOND_ASSIGN_OR_RETURN(const ResolvedLoad load, loads_.resolve(request));
  // A caller that joins after the loader gave up (everyone before it left)
  // shares that cancelled load; it then loads afresh, once.
  absl::StatusOr<Pin> pinned = absl::UnknownError("unreachable");
  for (int attempt = 0; attempt < 2; ++attempt) {
    LoadBoard::Ticket ticket = load_board_.join(load.model_id, watcher);
    pinned = load_once(load, ticket.load());
    if (!absl::IsCancelled(pinned.status()) || watcher.cancel.cancelled() || job.cancelled()) break;
  }
  if (!pinned.ok()) {
    if (absl::IsCancelled(pinned.status()) && job.cancelled()) return gate_.why_closed();
    if (absl::IsAborted(pinned.status())) {
      return absl::AbortedError(
          absl::StrCat("model \"", bounded(load.model_id), "\" is being unloaded; retry after it is gone"));
    }
    return pinned.status();
  }
  return answer(load, *std::move(pinned));
}

absl::StatusOr<Pin> Engine::load_once(const ResolvedLoad& load, LoadBoard::Load& shared) {
  DIFFUSIOND_ASSIGN_OR_RETURN(Claim claimed, cache_->claim(load.model_id));
  if (Pin* hit = std::get_if<Pin>(&claimed)) return std::move(*hit);
  // This caller loads; concurrent callers wait in claim() for finish().
  return std::get<LoadSlot>(claimed).finish(
      status_of(absl::StrCat("the load of \"", bounded(load.model_id), "\""), [&] { return run_load(load, shared); }));
}

absl::StatusOr<LoadedValue> Engine::run_load(const ResolvedLoad& load, LoadBoard::Load& shared) {
  // An infinite timeout puts the deadline in the infinite future.
  const absl::Time deadline = clock_->now() + options_.load_timeout;
  const auto timed_out = [&] { return clock_->now() >= deadline; };
  DIFFUSIOND_ASSIGN_OR_RETURN(const OpenedLoad opened, loads_.open_and_plan(load));
  const Checkpoint* checkpoint = opened.checkpoint.get();
  const ModelPlan& plan = opened.plan;
  // Everyone may have given up while the load waited for a worker; then it
  // must not evict anything to make room.
  if (shared.token().cancelled()) return absl::CancelledError("every caller cancelled the load");
  if (timed_out()) return load_timed_out(load.model_id, options_.load_timeout);
  StreamOptions stream;
  const auto publish = [&](const LoadProgress& p) {
    shared.publish(p);
    if (options_.on_load_progress) options_.on_load_progress(load.model_id, p);
  };
  stream.on_progress = [&](const LoadProgress& p) {
    publish(p);
    // The deadline is every caller's: the load stops before its next tensor.
    if (timed_out()) shared.cancel(load_timed_out(load.model_id, options_.load_timeout));
  };
  stream.cancel = shared.token();
  publish(LoadProgress{0, plan.plan.source_bytes, 0, static_cast<int64_t>(plan.plan.tensors.size()), {}});
  return load_planned_model(*checkpoint, plan, *cache_, stream, /*cpu_only=*/device_ == nullptr);
}

absl::StatusOr<ModelInfo> Engine::answer(const ResolvedLoad& load, Pin pinned) const {
  const ModelDescription& loaded = pinned.as<LoadedModel>()->description();
  DIFFUSIOND_RETURN_IF_ERROR(loads_.check_matches(load, loaded));
  ModelInfo info = info_of(load.model_id, loaded);
  pinned.reset();  // the caller holds no pin; the usage should not count one
  for (const CacheEntryStats& e : cache_->stats().entries) {
    if (e.key == load.model_id) set_usage(e, &info);
  }
  if (device_ != nullptr) device_->set_usage(&info);
  return info;
}

absl::StatusOr<UnloadResult> Engine::unload(const std::string& model_id, const UnloadOptions& options) {
  Job job(&gate_, options.cancel);
  DIFFUSIOND_RETURN_IF_ERROR(job.status());
  // The cache's wait wakes the moment the caller gives up or the drain
  // cancels it.
  UnloadOptions waiting = options;
  waiting.cancel = job.token();
  const int64_t placed = (device_ != nullptr ? device_->placement_bytes(model_id) : 0);
  absl::StatusOr<UnloadResult> r = cache_->unload(model_id, waiting);
  if (absl::IsDeadlineExceeded(r.status())) {
    return absl::DeadlineExceededError(absl::StrCat("model \"", bounded(model_id), "\" is still in use after ",
                                                    absl::FormatDuration(options.timeout),
                                                    " (pins or leases); it stays loaded"));
  }
  // The placement went with the model (PlacementDropper, before the cache's
  // unload returned): its VRAM is freed too.
  if (r.ok() && (device_ != nullptr ? device_->placement_bytes(model_id) : 0) == 0) r->freed_bytes[kCudaIndex] = placed;
  return r;
}

std::vector<ModelInfo> Engine::list() const {
  std::vector<ModelInfo> out;
  for (const CacheEntryStats& e : cache_->stats().entries) {
    if (e.loading) continue;
    ModelInfo info;
    bool is_model = false;
    cache_->peek(e.key, [&](const CacheValue& value) {
      // Adapters share the cache (adapter_admission.h) but are no models.
      if (const auto* loaded = dynamic_cast<const LoadedModel*>(&value)) {
        info = info_of(e.key, loaded->description());
        is_model = true;
      }
    });
    if (!is_model) continue;  // unloaded since the snapshot, or an adapter
    set_usage(e, &info);
    if (device_ != nullptr) device_->set_usage(&info);
    out.push_back(std::move(info));
  }
  return out;
}

absl::StatusOr<LeaseId> Engine::acquire_lease(const std::string& model_id, absl::Duration ttl) {
  Job job(&gate_);
  DIFFUSIOND_RETURN_IF_ERROR(job.status());
  absl::StatusOr<LeaseId> lease = cache_->acquire_lease(model_id, ttl);
  if (!lease.ok()) return not_loaded(model_id, lease.status());
  return lease;
}

absl::Status Engine::renew_lease(LeaseId lease, absl::Duration ttl) {
  Job job(&gate_);
  DIFFUSIOND_RETURN_IF_ERROR(job.status());
  return cache_->renew_lease(lease, ttl);
}

absl::Status Engine::release_lease(LeaseId lease) { return cache_->release_lease(lease); }

absl::StatusOr<Reservation> Engine::make_room(int64_t bytes, Device device, std::vector<std::string>* evicted) {
  Job job(&gate_);
  DIFFUSIOND_RETURN_IF_ERROR(job.status());
  if (bytes < 0) return absl::InvalidArgumentError(absl::StrCat("cannot make room for ", bytes, " bytes"));
  if (device == Device::kCuda && device_ != nullptr) return device_->make_room(bytes, evicted);
  return cache_->make_room(bytes, device, evicted);
}

std::optional<CacheStats> Engine::vram_stats() const {
  if (device_ == nullptr) return std::nullopt;
  return device_->stats();
}

absl::StatusOr<NamedTensors> Engine::step(const std::string& model_id, const NamedTensors& inputs,
                                          const CancellationToken& cancel,
                                          const std::vector<AdapterRequest>& adapters) {
  Job job(&gate_, cancel);
  DIFFUSIOND_RETURN_IF_ERROR(job.status());
  // Activations are reserved where the forward runs, and held until it
  // returns: on the device beside the placement, else in RAM beside the
  // model (step_admission.h).
  const ModelHandle model = ModelHandle::by_id(model_id);
  // The adapters first, checked and pinned, so a bad one costs no
  // activation room; then the model beside them, with the room their terms
  // work in.
  DIFFUSIOND_ASSIGN_OR_RETURN(const AdmittedAdapters held, admit_adapters_for(model, adapters, job, nullptr));
  CallNeeds needs;
  needs.cpu_room = [&](const Model& m) -> absl::StatusOr<CallRoom> {
    CallRoom room = step_room(m, inputs, model_id);
    room.bytes = with_adapter_working_memory(room.bytes, held);
    return room;
  };
  needs.device_bytes = [&](const Model& m) -> absl::StatusOr<int64_t> {
    return with_adapter_working_memory(m.step_activations(inputs, /*device_is_cpu=*/false).bytes, held);
  };
  DIFFUSIOND_ASSIGN_OR_RETURN(CallScope call, admit_call(model, needs, job, nullptr));
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::unique_ptr<AdapterSet> set, adapter_set_for(call.model(), held));
  return call.run("the step", [&] { return run_with_adapters(set.get(), [&] { return call.model().step(inputs); }); });
}

void Engine::cancel_all() {
  load_board_.cancel_all(gate_.why_closed());
  gate_.cancel_all();
}

int64_t Engine::unload_all(absl::Duration timeout) {
  int64_t freed = 0;
  UnloadOptions options;
  options.timeout = timeout;
  for (const CacheEntryStats& e : cache_->stats().entries) {
    absl::StatusOr<UnloadResult> r = cache_->unload(e.key, options);
    if (r.ok()) freed += r->freed_bytes[kCpuIndex];
  }
  return freed;
}

}  // namespace diffusiond
