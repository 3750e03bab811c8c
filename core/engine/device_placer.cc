#include "core/engine/device_placer.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "core/util/bounded_text.h"
#include "core/util/bytes.h"
#include "core/util/status_macros.h"
#include "core/vram/device_placement.h"

namespace diffusiond {

// A placement copies from its model's RAM copy: when the model is evicted
// or unloaded, its placement goes too (it is unpinned then: a forward pins
// both). Then the next observer hears the event.
class DevicePlacer::Dropper final : public CacheObserver {
 public:
  Dropper(DevicePlacer* placer, CacheObserver* next) : placer_(placer), next_(next) {}
  void on_cache_event(const CacheEvent& event) override {
    if (event.kind == CacheEvent::Kind::kEvicted || event.kind == CacheEvent::Kind::kUnloaded) {
      placer_->tier_->drop(event.key).IgnoreError();  // NOT_FOUND: it was never placed
    }
    if (next_ != nullptr) next_->on_cache_event(event);
  }

 private:
  DevicePlacer* const placer_;
  CacheObserver* const next_;
};

absl::StatusOr<std::unique_ptr<DevicePlacer>> DevicePlacer::create(const DevicePlacerOptions& options) {
  if (options.device == nullptr || options.vram_budget == nullptr) {
    return absl::InvalidArgumentError("a device placer needs a device and a VRAM budget");
  }
  std::unique_ptr<DevicePlacer> placer(new DevicePlacer(options));
  VramTierOptions vo;
  vo.vram_budget = options.vram_budget;
  vo.observer = options.observer;
  vo.clock = options.clock;
  DIFFUSIOND_ASSIGN_OR_RETURN(placer->tier_, VramTier::create(vo));
  return placer;
}

DevicePlacer::~DevicePlacer() = default;

std::unique_ptr<CacheObserver> DevicePlacer::placement_dropper(CacheObserver* next) {
  return std::make_unique<Dropper>(this, next);
}

// The engine's note callback, each line prefixed with the model.
std::function<void(const std::string&)> DevicePlacer::placement_note(const std::string& model_id) const {
  if (!options_.note) return nullptr;
  return [note = options_.note, prefix = absl::StrCat("model \"", bounded(model_id), "\" ")](const std::string& line) {
    note(prefix + line);
  };
}

absl::StatusOr<ResidencyPlan> DevicePlacer::plan_for(const std::string& model_id, const BlockLayout& layout,
                                               int64_t activation_bytes) {
  const int64_t capacity = tier_->budget().capacity_bytes();
  const ResidencyInput input = layout.residency_input(std::max<int64_t>(0, capacity - activation_bytes));
  absl::StatusOr<ResidencyPlan> plan = plan_residency(input);
  if (plan.ok() || !absl::IsResourceExhausted(plan.status())) return plan;
  // Asked of the tier as well, so that the refusal is counted and reported
  // like any other (diffusiond_vram_rejections_total, the event log), and
  // names needed, available and evictable bytes. The minimum beside the
  // activations exceeds the whole budget, so make_room refuses without
  // evicting anything.
  const absl::Status tier = tier_->make_room(residency_minimum_bytes(input) + activation_bytes).status();
  // The budget the plan saw is what the activations left: name both.
  return absl::Status(
      plan.status().code(),
      absl::StrCat("model \"", bounded(model_id), "\" on ", options_.device->name(), ": the VRAM budget is ",
                   format_bytes(capacity), " and this call's activations take ", format_bytes(activation_bytes),
                   " of it; ", plan.status().message(), tier.ok() ? "" : absl::StrCat(" (", tier.message(), ")")));
}

bool DevicePlacer::wants_replan(const Pin& pin, int64_t activation_bytes) const {
  const auto* placement = pin.as<DevicePlacement>();
  const int64_t capacity = tier_->budget().capacity_bytes();
  absl::StatusOr<ResidencyPlan> wanted = plan_residency(
      block_layout(placement->model()).residency_input(std::max<int64_t>(0, capacity - activation_bytes)));
  // A call no plan admits is refused by the activations' reservation.
  if (!wanted.ok()) return false;
  const int64_t held = placement->plan().device_bytes();
  if (wanted->device_bytes() < held) return true;  // shrink: stream more rather than refuse or evict
  // Grow only into room that is free now: never evict another placement
  // for blocks this one can stream.
  return wanted->device_bytes() > held &&
         wanted->device_bytes() - held + activation_bytes <= tier_->budget().available_bytes();
}

absl::StatusOr<Pin> DevicePlacer::place(const std::string& model_id, const Model& model, int64_t activation_bytes,
                                  CallDevice* where) {
  const auto build = [&]() -> absl::StatusOr<LoadedValue> {
    const BlockLayout layout = block_layout(model);
    // The plan leaves room for this call's activations. A later call whose
    // activations want another plan re-plans (prepare).
    DIFFUSIOND_ASSIGN_OR_RETURN(const ResidencyPlan plan, plan_for(model_id, layout, activation_bytes));
    std::vector<std::string> evicted;
    DIFFUSIOND_ASSIGN_OR_RETURN(Reservation reservation, tier_->make_room(plan.device_bytes(), &evicted));
    DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<DevicePlacement> placement,
                                DevicePlacement::create(model, *options_.device, layout, plan, reservation,
                                                        PlacementOptions{options_.fp8_matmul, options_.fp8_fast_accum,
                                                                         placement_note(model_id)}));
    if (where != nullptr) {
      where->placed = true;
      where->evicted.insert(where->evicted.end(), evicted.begin(), evicted.end());
    }
    LoadedValue value;
    value.value = std::move(placement);
    value.reservations.push_back(std::move(reservation));
    return value;
  };
  for (int attempt = 0;; ++attempt) {
    DIFFUSIOND_ASSIGN_OR_RETURN(Pin pin, tier_->acquire(model_id, build));
    // A placement of an earlier model under the same id (unloaded and
    // loaded again before its drop ran) is dropped, then placed anew.
    if (&pin.as<DevicePlacement>()->model() == &model || attempt > 0) return pin;
    pin.reset();
    tier_->drop(model_id).IgnoreError();
  }
}

void DeviceRun::report_streamed(CallDevice* where) const {
  if (where == nullptr || !placement) return;
  where->streamed_bytes += placement.as<DevicePlacement>()->bytes_streamed() - streamed_before;
}

absl::StatusOr<DeviceRun> DevicePlacer::prepare(const std::string& model_id, const Model& model,
                                                 int64_t activation_bytes, CallDevice* where) {
  if (where != nullptr) where->device = options_.device->name();
  DeviceRun run;
  DIFFUSIOND_ASSIGN_OR_RETURN(run.placement, place(model_id, model, activation_bytes, where));
  // Re-plan a placement made for other activations: dropped (if no other
  // call holds it: then it serves this one as it is) and placed again for
  // these. Once: the new plan is this call's.
  if (wants_replan(run.placement, activation_bytes)) {
    run.placement.reset();
    if (tier_->drop(model_id, /*wait=*/false).ok() && where != nullptr) where->replanned = true;
    DIFFUSIOND_ASSIGN_OR_RETURN(run.placement, place(model_id, model, activation_bytes, where));
  }
  const DevicePlacement& placement = *run.placement.as<DevicePlacement>();
  if (where != nullptr) where->plan = placement.plan().summary();
  absl::StatusOr<Reservation> activations =
      tier_->make_room(activation_bytes, where != nullptr ? &where->evicted : nullptr);
  if (!activations.ok()) {
    return absl::Status(activations.status().code(),
                        absl::StrCat("model \"", bounded(model_id), "\": this call's activations (estimated ",
                                     format_bytes(activation_bytes), ") do not fit beside its placement (",
                                     placement.plan().summary(), "): ", activations.status().message()));
  }
  run.activations = std::move(*activations);
  run.streamed_before = placement.bytes_streamed();
  return run;
}

int64_t DevicePlacer::placement_bytes(const std::string& model_id) const {
  int64_t bytes = 0;
  tier_->peek(model_id, [&](const CacheValue& value) {
    bytes = static_cast<const DevicePlacement&>(value).plan().device_bytes();
  });
  return bytes;
}

void DevicePlacer::set_usage(ModelInfo* info) const {
  tier_->peek(info->model_id, [&](const CacheValue& value) {
    const auto& placement = static_cast<const DevicePlacement&>(value);
    info->vram_plan = placement.plan().summary();
    if (const std::string fp8 = placement.fp8_matmul_summary(); !fp8.empty()) absl::StrAppend(&info->vram_plan, "; ", fp8);
    info->vram_streamed_bytes_per_step = placement.plan().streamed_bytes_per_forward;
    info->bytes[kCudaIndex] = placement.plan().device_bytes();
  });
}

}  // namespace diffusiond
