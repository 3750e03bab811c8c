#include "server/tier_stats.h"

#include <map>
#include <string>
#include <utility>

namespace diffusiond {

CacheStats with_vram_tier(CacheStats ram, const std::optional<CacheStats>& vram) {
  if (!vram.has_value()) return ram;
  // The tier's inner cache also reports the empty RAM budget it needs;
  // only its VRAM budget is news.
  for (const BudgetSnapshot& b : vram->budgets) {
    if (b.device == Device::kCuda) ram.budgets.push_back(b);
  }
  std::map<std::string, int64_t> placed;
  for (const CacheEntryStats& e : vram->entries) placed[e.key] = e.bytes[kCudaIndex];
  for (CacheEntryStats& e : ram.entries) {
    auto it = placed.find(e.key);
    if (it != placed.end()) e.bytes[kCudaIndex] = it->second;
  }
  return ram;
}

CacheStats both_tiers_stats(const EngineApi& engine) { return with_vram_tier(engine.stats(), engine.vram_stats()); }

}  // namespace diffusiond
