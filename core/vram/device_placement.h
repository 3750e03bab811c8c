// DevicePlacement: one model's weights on a VramDevice, by its residency
// plan — resident weights copied once, streamed blocks laid out for two
// slots and read from their (pinned) RAM copy — and DeviceForward, the
// forward-time source that serves them (forward_weights.h), streaming each
// block in on the copy queue one block ahead of the compute queue.
//
// FP8 weights stay FP8 on the device: a linear runs them as a scaled FP8
// matmul where it can, else decodes each into one workspace per forward.
// A placement is a cache value of the VramTier: destroying it frees its
// device memory, never the model's RAM copy.
#ifndef DIFFUSIOND_CORE_VRAM_DEVICE_PLACEMENT_H_
#define DIFFUSIOND_CORE_VRAM_DEVICE_PLACEMENT_H_

#include <torch/types.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cache/cache_value.h"
#include "core/memory/budget.h"
#include "core/models/forward_weights.h"
#include "core/models/model.h"
#include "core/util/mutex.h"
#include "core/vram/block_layout.h"
#include "core/vram/residency_plan.h"
#include "core/vram/vram_device.h"

namespace diffusiond {

struct PlacementOptions {
  // Run linear layers whose weight is FP8 (e4m3fn) as a scaled FP8 matmul
  // (kernels/scaled_fp8_linear.h) where the layer and device allow it, at a
  // compute dtype other than float32 (float32 asks for the exact upcast).
  // Each layer's choice, and why a layer was upcast, is noted once.
  bool fp8_matmul = true;
  // Let those matmuls accumulate in cuBLAS's reduced precision between its
  // promotions (scaled_fp8_linear's fast_accum): quicker on Hopper, further
  // from the upcast path. Off by default; gpu-check measures both.
  bool fp8_fast_accum = false;
  // One-line notes for the daemon's log; may be empty.
  std::function<void(const std::string&)> note;
};

class DevicePlacement final : public CacheValue {
 public:
  // Copies `model`'s resident weights to `device` and allocates the
  // streaming slots, charging each allocation to `reservation`
  // (RESOURCE_EXHAUSTED past it, or when the device refuses). REQUIRES:
  // `plan` was made from `layout`, which is block_layout(model); `model`
  // (its RAM copy) outlives the placement.
  static absl::StatusOr<std::unique_ptr<DevicePlacement>> create(const Model& model, VramDevice& device,
                                                                 const BlockLayout& layout,
                                                                 const ResidencyPlan& plan,
                                                                 Reservation& reservation,
                                                                 PlacementOptions options = {});
  ~DevicePlacement() override;

  const Model& model() const { return model_; }
  VramDevice& device() const { return device_; }
  const ResidencyPlan& plan() const { return plan_; }
  // "scaled FP8 matmul on 40 of 52 FP8 layers; 12 upcast: <first reason>",
  // or empty before any FP8 layer ran.
  std::string fp8_matmul_summary() const;
  // Bytes copied from RAM by streaming so far.
  int64_t bytes_streamed() const { return bytes_streamed_.load(std::memory_order_relaxed); }

 private:
  friend class DeviceForward;
  using Stored = std::variant<torch::Tensor, Fp8Weight>;
  // A weight of a streamed block: its RAM copy and where it sits in a slot.
  struct SlotEntry {
    Stored host;
    int64_t offset = 0;
  };
  struct StreamedBlock {
    std::vector<std::string> names;
    std::vector<SlotEntry> entries;
  };
  struct Where {
    int streamed = -1;  // index into streamed_, or -1: resident
    int entry = 0;
  };

  DevicePlacement(const Model& model, VramDevice& device, const ResidencyPlan& plan, PlacementOptions options)
      : model_(model), device_(device), plan_(plan), options_(std::move(options)) {}
  // Records `name`'s matmul choice (null reason: scaled), noting it the
  // first time only. Returns whether the layer may run scaled: the reason
  // is null and no scaled call of the layer has failed (note_refusal).
  bool note_choice(absl::string_view name, const char* unavailable_reason);
  // Upcasts `name` from now on: a scaled call failed with `what`.
  void note_refusal(absl::string_view name, absl::string_view what);
  // Keeps largest_fp8_numel_ the size of the largest FP8 weight placed.
  void note_size(const Stored& weight) {
    if (const Fp8Weight* f8 = std::get_if<Fp8Weight>(&weight)) {
      largest_fp8_numel_ = std::max(largest_fp8_numel_, f8->codes.numel());
    }
  }

  const Model& model_;
  VramDevice& device_;
  const ResidencyPlan plan_;
  const PlacementOptions options_;
  std::map<std::string, Stored, std::less<>> resident_;
  std::vector<StreamedBlock> streamed_;  // forward order
  std::map<std::string, Where, std::less<>> where_;
  std::vector<std::unique_ptr<HostPin>> pins_;
  std::vector<torch::Tensor> slots_;  // uint8 [slot_bytes] each
  int64_t largest_fp8_numel_ = 0;     // the decode workspace's size

  // Streaming state, shared by consecutive forwards (a block left in a
  // slot by one is not copied again by the next).
  Mutex stream_mu_;  // held by a DeviceForward for its whole life
  std::vector<int> slot_block_;  // streamed_ index in each slot, or -1
  std::vector<std::shared_ptr<Fence>> slot_ready_;
  std::atomic<int64_t> bytes_streamed_{0};

  mutable Mutex choices_mu_;
  // FP8 layer → why it is upcast, or empty when it runs scaled.
  std::map<std::string, std::string, std::less<>> choices_ ABSL_GUARDED_BY(choices_mu_);
  // FP8 layers whose scaled matmul failed: upcast from then on.
  std::set<std::string, std::less<>> refused_ ABSL_GUARDED_BY(choices_mu_);
};

// Serves one model's weights from its placement to forwards on the calling
// thread while it lives. Forwards of a streaming placement run one at a
// time (they share its slots); fully resident ones run concurrently.
class DeviceForward final : public ForwardWeights {
 public:
  explicit DeviceForward(DevicePlacement& placement);
  ~DeviceForward() override;

  torch::Device device() const override { return placement_.device_.torch_device(); }
  torch::Tensor param(absl::string_view name, torch::ScalarType dtype) override;
  // An FP8 weight's linear: the scaled FP8 matmul where the placement,
  // layer and device allow it, else the weight decoded into this forward's
  // workspace and upcast. Nothing for a dense weight (the caller's path).
  std::optional<torch::Tensor> linear(const torch::Tensor& x, absl::string_view weight, absl::string_view bias,
                                      torch::ScalarType dtype) override;
  // How many times this forward allocated its decode workspace: once, at
  // the placement's largest FP8 weight, unless the compute dtype changes.
  int decode_workspace_allocations() const { return workspace_allocations_; }

 private:
  // `f8` decoded at `dtype` into the workspace, valid until the next call:
  // an upcast linear's weight, read by its matmul before the next decode
  // overwrites it (on the same stream on a GPU).
  torch::Tensor decode_into_workspace(const Fp8Weight& f8, torch::ScalarType dtype);
  // The weight as stored on the device: resident, or a view of its slot.
  std::variant<torch::Tensor, Fp8Weight> stored(absl::string_view name);
  // Makes streamed block k readable by compute, and starts the next one.
  void ensure(int k);
  // Enqueues block k's copy into its slot once compute is done with the slot.
  void issue(int k) ABSL_EXCLUSIVE_LOCKS_REQUIRED(placement_.stream_mu_);

  DevicePlacement& placement_;
  const bool streaming_;
  int current_ = -1;
  torch::Tensor workspace_;  // 1-D, of the compute dtype, on the device
  int workspace_allocations_ = 0;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_VRAM_DEVICE_PLACEMENT_H_
