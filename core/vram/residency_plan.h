// The residency plan: which of a model's blocks stay on the device and
// which are streamed in for each forward, for a given VRAM budget.
//
// Deterministic: the same blocks and budget give the same plan. Everything
// resident when it fits. Otherwise the model's global weights (embedders,
// final layer: everything outside a block) stay, and as many blocks as fit
// stay with the rest streamed through two slots the size of the largest
// streamed block, one in use and one being filled. The count is the most
// that fits with the last blocks streamed; the streamed blocks are then
// spread evenly along the forward where that fits and copies no more bytes
// (blocks of one size: always), so that each copy overlaps the compute of
// the resident blocks before it instead of the copies queueing at the end.
//
// Torch-free: a plan is bytes and names.
#ifndef DIFFUSIOND_CORE_VRAM_RESIDENCY_PLAN_H_
#define DIFFUSIOND_CORE_VRAM_RESIDENCY_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace diffusiond {

struct PlanBlock {
  std::string name;  // the block's prefix, e.g. "layers.3"
  int64_t bytes = 0;  // its weights as stored (FP8 stays FP8 on the device)
};

struct ResidencyInput {
  int64_t global_bytes = 0;       // weights outside every block
  std::vector<PlanBlock> blocks;  // in forward order
  int64_t budget_bytes = 0;       // what the placement may hold
};

struct ResidencyPlan {
  std::vector<bool> resident;  // per block, in forward order
  int resident_blocks = 0;
  int slots = 0;               // 0 when every block is resident
  int64_t slot_bytes = 0;      // each slot: the largest streamed block
  int64_t resident_bytes = 0;  // globals + resident blocks
  int64_t streamed_bytes_per_forward = 0;

  // What the placement holds on the device.
  int64_t device_bytes() const { return resident_bytes + slots * slot_bytes; }
  bool fully_resident() const { return slots == 0; }
  // "all 12 blocks resident" or "5 of 12 blocks resident, 7 streamed
  // (1.2 GiB per forward) through 2 slots of 180 MiB".
  std::string summary() const;
};

// The least any plan holds: the globals and two streaming slots of the
// largest block (one when there is one block; the globals alone with none).
int64_t residency_minimum_bytes(const ResidencyInput& input);

// RESOURCE_EXHAUSTED when even the globals and the streaming slots exceed
// the budget: the message names the budget, the minimum and its parts.
// INVALID_ARGUMENT for negative sizes.
absl::StatusOr<ResidencyPlan> plan_residency(const ResidencyInput& input);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_VRAM_RESIDENCY_PLAN_H_
