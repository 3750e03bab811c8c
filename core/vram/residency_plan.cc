#include "core/vram/residency_plan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/util/bytes.h"

namespace diffusiond {

std::string ResidencyPlan::summary() const {
  const int total = static_cast<int>(resident.size());
  if (fully_resident()) return absl::StrCat("all ", total, " blocks resident");
  return absl::StrCat(resident_blocks, " of ", total, " blocks resident, ", total - resident_blocks,
                      " streamed (", format_bytes(streamed_bytes_per_forward), " per forward) through ",
                      slots, " slot", slots == 1 ? "" : "s", " of ", format_bytes(slot_bytes));
}

int64_t residency_minimum_bytes(const ResidencyInput& input) {
  int64_t largest = 0;
  for (const PlanBlock& b : input.blocks) largest = std::max(largest, b.bytes);
  return input.global_bytes + std::min<int64_t>(2, static_cast<int64_t>(input.blocks.size())) * largest;
}

absl::StatusOr<ResidencyPlan> plan_residency(const ResidencyInput& input) {
  if (input.global_bytes < 0 || input.budget_bytes < 0) {
    return absl::InvalidArgumentError("residency plan: negative size");
  }
  const int n = static_cast<int>(input.blocks.size());
  // prefix[k]: the first k blocks; suffix_max[k]: the largest of blocks k..n-1.
  std::vector<int64_t> prefix(n + 1, 0), suffix_max(n + 1, 0);
  for (int i = 0; i < n; ++i) {
    if (input.blocks[i].bytes < 0) return absl::InvalidArgumentError("residency plan: negative block size");
    prefix[i + 1] = prefix[i] + input.blocks[i].bytes;
  }
  for (int i = n - 1; i >= 0; --i) suffix_max[i] = std::max(suffix_max[i + 1], input.blocks[i].bytes);

  ResidencyPlan plan;
  plan.resident.assign(n, false);
  // Keep k blocks resident, stream the other n - k: the most that fits.
  for (int k = n; k >= 0; --k) {
    const int slots = std::min(2, n - k);
    const int64_t need = input.global_bytes + prefix[k] + slots * suffix_max[k];
    if (need > input.budget_bytes) continue;
    for (int i = 0; i < k; ++i) plan.resident[i] = true;
    plan.resident_blocks = k;
    plan.slots = slots;
    plan.slot_bytes = slots > 0 ? suffix_max[k] : 0;
    plan.resident_bytes = input.global_bytes + prefix[k];
    plan.streamed_bytes_per_forward = prefix[n] - prefix[k];
    return plan;
  }
  const int64_t largest = suffix_max[0];
  const int slots = std::min(2, n);
  return absl::ResourceExhaustedError(absl::StrCat(
      format_bytes(input.budget_bytes), " of VRAM for weights cannot run this model: it needs at least ",
      format_bytes(residency_minimum_bytes(input)), " (weights outside blocks ",
      format_bytes(input.global_bytes), " + ", slots, " streaming slot", slots == 1 ? "" : "s",
      " of the largest block, ", format_bytes(largest), "); the whole model is ",
      format_bytes(input.global_bytes + prefix[n])));
}

}  // namespace diffusiond
