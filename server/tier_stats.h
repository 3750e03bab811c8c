// The cache statistics the daemon reports (GetStats, /metrics): the
// engine's RAM cache with its VRAM tier folded in, so that the existing
// per-device views (budgets, each model's bytes by device) cover both.
//
// Not here: the tiers themselves (core/engine, core/vram).
#ifndef DIFFUSIOND_SERVER_TIER_STATS_H_
#define DIFFUSIOND_SERVER_TIER_STATS_H_

#include <optional>

#include "core/cache/cache_stats.h"
#include "core/engine/engine_api.h"

namespace diffusiond {

// Returns `ram` with the VRAM tier's budget appended to `budgets` and each
// entry's bytes[kCuda] set to its model's placement (0 when it has none).
// The counters stay the RAM cache's: a placement evicted to RAM and placed
// again is no cache miss. Without `vram`, `ram` unchanged.
CacheStats with_vram_tier(CacheStats ram, const std::optional<CacheStats>& vram);

// with_vram_tier(engine.stats(), engine.vram_stats()).
CacheStats both_tiers_stats(const EngineApi& engine);

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_TIER_STATS_H_
