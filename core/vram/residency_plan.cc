#include "core/vram/residency_plan.h"

#include <algorithm>
#include <optional>

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

namespace {

// `tail`'s streamed blocks moved apart: as many, chosen evenly along the
// forward among the blocks no larger than its slots, so that each copy can
// overlap the compute of resident blocks before it (with the last blocks
// streamed, only one copy overlaps the resident part and the rest wait on
// each other). Nothing when that needs more than the budget or copies more
// bytes per forward.
std::optional<ResidencyPlan> spread_out(const ResidencyInput& input, const ResidencyPlan& tail) {
  const int n = static_cast<int>(input.blocks.size());
  const int streamed = n - tail.resident_blocks;
  if (streamed == 0 || streamed == n) return std::nullopt;
  std::vector<int> eligible;
  for (int i = 0; i < n; ++i) {
    if (input.blocks[i].bytes <= tail.slot_bytes) eligible.push_back(i);
  }
  // Every tail block is eligible, so there are at least `streamed`.
  const int64_t e = static_cast<int64_t>(eligible.size());
  ResidencyPlan plan = tail;
  plan.resident.assign(n, true);
  plan.slot_bytes = 0;
  plan.streamed_bytes_per_forward = 0;
  for (int64_t j = 0; j < streamed; ++j) {
    const int b = eligible[(2 * j + 1) * e / (2 * streamed)];
    plan.resident[b] = false;
    plan.slot_bytes = std::max(plan.slot_bytes, input.blocks[b].bytes);
    plan.streamed_bytes_per_forward += input.blocks[b].bytes;
  }
  plan.resident_bytes = tail.resident_bytes + tail.streamed_bytes_per_forward - plan.streamed_bytes_per_forward;
  if (plan.streamed_bytes_per_forward > tail.streamed_bytes_per_forward || plan.device_bytes() > input.budget_bytes) {
    return std::nullopt;
  }
  return plan;
}

}  // namespace

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

  // Keep k blocks resident, stream the other n - k: the most that fits with
  // the last n - k streamed. Then stream as many spread out instead, where
  // that fits and copies no more bytes.
  for (int k = n; k >= 0; --k) {
    const int slots = std::min(2, n - k);
    const int64_t need = input.global_bytes + prefix[k] + slots * suffix_max[k];
    if (need > input.budget_bytes) continue;
    ResidencyPlan plan;
    plan.resident.assign(n, true);
    for (int i = k; i < n; ++i) plan.resident[i] = false;
    plan.resident_blocks = k;
    plan.slots = slots;
    plan.slot_bytes = slots > 0 ? suffix_max[k] : 0;
    plan.resident_bytes = input.global_bytes + prefix[k];
    plan.streamed_bytes_per_forward = prefix[n] - prefix[k];
    if (std::optional<ResidencyPlan> spread = spread_out(input, plan)) return *spread;
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
