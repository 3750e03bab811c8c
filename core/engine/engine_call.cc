// Engine::ready and Engine::admit_call: a model readied to a handle, and
// the one admission of every call on it (internal/call_scope.h). On the
// CPU the model is pinned with the call's room reserved beside it in one
// step (step_admission.h pin_with_room); on a device it is pinned and
// placed, and the activations reserved beside the placement
// (device_placer.h). A readied model evicted since ready() is loaded again
// here, so no caller retries (model_handle.h).
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/engine/engine.h"
#include "core/engine/internal/call_scope.h"
#include "core/util/bounded_text.h"
#include "core/util/status_macros.h"

namespace diffusiond {

absl::StatusOr<ModelHandle> Engine::ready(const ModelLoadRequest& model, std::optional<ModelRole> role,
                                          const LoadWatcher& watcher) {
  const std::string& id_or_path = model.path;
  // A loaded model's id need not be a path: it is looked up first.
  const std::vector<ModelInfo> cached = list();
  const auto hit = std::find_if(cached.begin(), cached.end(),
                                [&](const ModelInfo& m) { return m.model_id == id_or_path; });
  bool loaded = false;
  ModelInfo info;
  if (hit != cached.end()) {
    info = *hit;
    DIFFUSIOND_RETURN_IF_ERROR(check_load_options(info, model));
  } else {
    loaded = absl::IsNotFound(find(model).status());
    DIFFUSIOND_ASSIGN_OR_RETURN(info, load(model, watcher));
  }
  if (role.has_value() && info.role != *role) {
    return absl::FailedPreconditionError(absl::StrCat("model \"", bounded(id_or_path), "\" is a ",
                                                      model_role_name(info.role), " (", info.architecture,
                                                      "), not a ", model_role_name(*role)));
  }
  ModelLoadRequest reload = loads_.reload_of(info);
  return ModelHandle(std::move(info), std::move(reload), loaded);
}

absl::StatusOr<Engine::CallScope> Engine::admit_call(const ModelHandle& model, const CallNeeds& needs,
                                                     const Job& job, CallReport* report) {
  absl::StatusOr<CallScope> call = admit_cached(model.id(), needs, job, report);
  if (!absl::IsNotFound(call.status()) || !model.reload().has_value()) return call;
  // Evicted since it was readied (another call needed the room): loaded
  // again, under its id, and admitted once more.
  LoadWatcher watcher;
  watcher.cancel = job.token();
  watcher.on_progress = [report](const LoadProgress& p) {
    if (report != nullptr) report->evicted.insert(report->evicted.end(), p.evicted.begin(), p.evicted.end());
  };
  DIFFUSIOND_RETURN_IF_ERROR(load(*model.reload(), watcher).status());
  if (report != nullptr) report->reloaded = true;
  return admit_cached(model.id(), needs, job, report);
}

absl::StatusOr<Engine::CallScope> Engine::admit_cached(const std::string& model_id, const CallNeeds& needs,
                                                       const Job& job, CallReport* report) {
  // An adapter's key names no model (adapter_admission.h).
  if (is_adapter_key(model_id)) {
    return absl::NotFoundError(absl::StrCat("\"", bounded(model_id), "\" is an adapter, not a model"));
  }
  CallScope call;
  call.token_ = job.token();
  call.where_ = report != nullptr ? &report->where : nullptr;
  if (device_ != nullptr) {
    DIFFUSIOND_ASSIGN_OR_RETURN(call.pinned_, pin(model_id));
    DIFFUSIOND_ASSIGN_OR_RETURN(const int64_t bytes, needs.device_bytes(call.model()));
    DIFFUSIOND_ASSIGN_OR_RETURN(call.on_device_, device_->prepare(model_id, call.model(), bytes, call.where_));
  } else {
    DIFFUSIOND_ASSIGN_OR_RETURN(
        PinnedRoom room,
        pin_with_room(model_id, needs.cpu_room, job, report != nullptr ? &report->evicted : nullptr, needs.wait));
    call.pinned_ = std::move(room.pin);
    call.activations_ = std::move(room.reservation);
  }
  return call;
}

}  // namespace diffusiond
