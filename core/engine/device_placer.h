// DevicePlacer: the engine's VRAM tier — placing a model of any role
// (denoiser, text encoder, VAE) on the device before its forwards,
// re-planning it when a call's activations want another plan, reserving
// the activations beside it, and dropping a placement when its model
// leaves RAM. One admission rule for every role on the device.
//
// Not here: the placements themselves (core/vram/device_placement.h), the
// residency plan (core/vram/residency_plan.h), the RAM side of a call
// (step_admission.h).
#ifndef DIFFUSIOND_CORE_ENGINE_DEVICE_PLACER_H_
#define DIFFUSIOND_CORE_ENGINE_DEVICE_PLACER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cache/cache_observer.h"
#include "core/cache/model_cache.h"
#include "core/engine/call_device.h"
#include "core/engine/engine_api.h"
#include "core/models/model.h"
#include "core/util/clock.h"
#include "core/vram/block_layout.h"
#include "core/vram/residency_plan.h"
#include "core/vram/vram_device.h"
#include "core/vram/vram_tier.h"

namespace diffusiond {

// One call on the device: its model's placement pinned and its
// activations reserved beside it, for as long as the call runs.
struct DeviceRun {
  Pin placement;
  Reservation activations;
  int64_t streamed_before = 0;  // the placement's bytes_streamed() when the call began
  // Adds what the call streamed to `where` (if any), once it ran.
  void report_streamed(CallDevice* where) const;
};

struct DevicePlacerOptions {
  VramDevice* device = nullptr;   // required; not owned
  Budget* vram_budget = nullptr;  // required; not owned
  CacheObserver* observer = nullptr;  // the tier's events; optional, not owned
  Clock* clock = nullptr;             // default real_clock()
  bool fp8_matmul = true;             // PlacementOptions
  bool fp8_fast_accum = false;        // PlacementOptions
  std::function<void(const std::string&)> note;  // one-line notes; may be empty
};

// Thread-safe.
class DevicePlacer {
 public:
  static absl::StatusOr<std::unique_ptr<DevicePlacer>> create(const DevicePlacerOptions& options);
  ~DevicePlacer();

  // The observer a RAM cache reports to: it drops the placement of a model
  // evicted or unloaded from RAM, then tells `next` (optional). REQUIRES:
  // this placer outlives it.
  std::unique_ptr<CacheObserver> placement_dropper(CacheObserver* next);

  // Places `model` (cached as `model_id`, its blocks from
  // Model::block_containers()) unless placed, re-plans a placement whose
  // plan does not suit `activation_bytes` (residency_plan.h), and reserves
  // them beside it. RESOURCE_EXHAUSTED naming the budget, the activations
  // and the tier's needed, available and evictable bytes. `where`
  // (optional) says what was done.
  absl::StatusOr<DeviceRun> prepare(const std::string& model_id, const Model& model, int64_t activation_bytes,
                                    CallDevice* where);

  // The VRAM `model_id`'s placement holds; 0 when it has none.
  int64_t placement_bytes(const std::string& model_id) const;
  // Adds the placement's figures to `info`.
  void set_usage(ModelInfo* info) const;
  CacheStats stats() const { return tier_->stats(); }
  // The tier's make_room (EngineApi::make_room on Device::kCuda).
  absl::StatusOr<Reservation> make_room(int64_t bytes, std::vector<std::string>* evicted) {
    return tier_->make_room(bytes, evicted);
  }

 private:
  class Dropper;
  explicit DevicePlacer(const DevicePlacerOptions& options) : options_(options) {}
  absl::StatusOr<Pin> place(const std::string& model_id, const Model& model, int64_t activation_bytes,
                            CallDevice* where);
  // The plan `model` gets for calls of `activation_bytes`; the refusal
  // names the budget, the activations and the tier's figures.
  absl::StatusOr<ResidencyPlan> plan_for(const std::string& model_id, const BlockLayout& layout,
                                         int64_t activation_bytes);
  // True when the placement in `pin` should be built again for calls of
  // `activation_bytes`: it holds more than their plan (a larger call), or
  // less while the budget has room free for the larger plan.
  bool wants_replan(const Pin& pin, int64_t activation_bytes) const;
  std::function<void(const std::string&)> placement_note(const std::string& model_id) const;

  const DevicePlacerOptions options_;
  std::unique_ptr<VramTier> tier_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_ENGINE_DEVICE_PLACER_H_
