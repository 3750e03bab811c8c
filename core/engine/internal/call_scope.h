// Engine::CallScope, shared by the engine's source files: one call on one
// cached model, admitted. It holds what the call needs while it runs — the
// model's pin, the call's activations reserved beside it (in RAM, or on the
// device beside its placement) — and runs the call's work under the job's
// cancellation, the activation arena and, on a device, the placement's
// weights. Engine::admit_call makes one; every operation on a model (step,
// encode_text, decode_image, each denoise segment) is "admit, then run".
//
// Not here: the Job (work_gate.h), which a Denoise keeps across
// several scopes, one per segment.
#ifndef DIFFUSIOND_CORE_ENGINE_INTERNAL_CALL_SCOPE_H_
#define DIFFUSIOND_CORE_ENGINE_INTERNAL_CALL_SCOPE_H_

#include <functional>
#include <optional>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/engine/engine.h"
#include "core/memory/activation_arena_scope.h"
#include "core/util/cancellation_scope.h"
#include "core/util/exception_status.h"
#include "core/vram/device_placement.h"

namespace diffusiond {

// What one call on a model reserves beside it. Each function reads the
// model the cache holds under the id; its error (a model in the wrong role,
// inputs it cannot take) refuses the call before any wait for room.
struct Engine::CallNeeds {
  // The call's room in RAM, where the call runs on the CPU.
  std::function<absl::StatusOr<CallRoom>(const Model&)> cpu_room;
  // The call's activations on the device, beside the placement.
  std::function<absl::StatusOr<int64_t>(const Model&)> device_bytes;
  // On the CPU: wait in line for room that work in flight holds (up to
  // EngineOptions::max_room_wait), else refuse at once.
  bool wait = true;
};

// Movable, not copyable; used by one thread.
class Engine::CallScope {
 public:
  CallScope(CallScope&&) = default;
  CallScope& operator=(CallScope&&) = default;

  // The admitted model; valid while the scope lives.
  const Model& model() const { return pinned_.as<LoadedModel>()->model(); }

  // Runs `fn` (returning a Status or StatusOr) as the call: a forward stops
  // between its blocks once the job is cancelled, its large tensors come
  // from the call's arena, and on a device its streamed weights from the
  // placement. An exception becomes a status naming `what` (status_of).
  // Afterwards adds the weights streamed to the CallDevice given at
  // admission, if any.
  template <typename F>
  auto run(absl::string_view what, F&& fn) -> decltype(fn()) {
    using Result = decltype(fn());
    Result result = [&]() -> Result {
      std::optional<DeviceForward> source;
      if (on_device_.has_value()) source.emplace(*on_device_->placement.as<DevicePlacement>());
      CancellationScope scope(token_);
      ActivationArenaScope arena(activations_.reserved_bytes());
      return status_of(what, std::forward<F>(fn));
    }();
    if (on_device_.has_value()) on_device_->report_streamed(where_);
    return result;
  }

 private:
  friend class Engine;
  CallScope() = default;

  // Member order is teardown order: the placement's pin and its VRAM
  // activations go first, then the RAM activations, then the model's pin,
  // so no budget is credited while what it stands for is still held.
  Pin pinned_;
  Reservation activations_;
  std::optional<DeviceRun> on_device_;
  CancellationToken token_;
  CallDevice* where_ = nullptr;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_ENGINE_INTERNAL_CALL_SCOPE_H_
