// Engine::admit_call: the one admission of every call on a cached model
// (internal/call_scope.h). On the CPU the model is pinned with the call's
// room reserved beside it in one step (step_admission.h pin_with_room); on
// a device it is pinned and placed, and the activations reserved beside the
// placement (device_placer.h).
#include "absl/status/statusor.h"
#include "core/engine/engine.h"
#include "core/engine/internal/call_scope.h"
#include "core/engine/internal/engine_job.h"
#include "core/util/status_macros.h"

namespace diffusiond {

absl::StatusOr<Engine::CallScope> Engine::admit_call(const std::string& model_id, const CallNeeds& needs,
                                                     const Job& job, std::vector<std::string>* evicted,
                                                     CallDevice* where) {
  CallScope call;
  call.token_ = job.token();
  call.where_ = where;
  if (device_ != nullptr) {
    DIFFUSIOND_ASSIGN_OR_RETURN(call.pinned_, pin(model_id));
    DIFFUSIOND_ASSIGN_OR_RETURN(const int64_t bytes, needs.device_bytes(call.model()));
    DIFFUSIOND_ASSIGN_OR_RETURN(call.on_device_, device_->prepare(model_id, call.model(), bytes, where));
  } else {
    DIFFUSIOND_ASSIGN_OR_RETURN(PinnedRoom room, pin_with_room(model_id, needs.cpu_room, job, evicted, needs.wait));
    call.pinned_ = std::move(room.pin);
    call.activations_ = std::move(room.reservation);
  }
  return call;
}

}  // namespace diffusiond
