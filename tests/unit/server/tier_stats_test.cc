// The daemon's statistics over both tiers: the VRAM budget beside the RAM
// one, placements' bytes on their models, the RAM cache's counters.
#include "server/tier_stats.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_engine.h"

namespace diffusiond {
namespace {


CacheEntryStats entry(const std::string& key, int64_t cpu, int64_t cuda) {
  CacheEntryStats e;
  e.key = key;
  e.bytes = {cpu, cuda};
  return e;
}

BudgetSnapshot budget(Device device, int64_t capacity, int64_t committed) {
  BudgetSnapshot b;
  b.device = device;
  b.capacity_bytes = capacity;
  b.committed_bytes = committed;
  return b;
}

TEST(TierStats, WithoutADeviceTheRamCacheIsEverything) {
  CacheStats ram;
  ram.budgets = {budget(Device::kCpu, 1000, 600)};
  ram.entries = {entry("a", 600, 0)};
  ram.misses = 2;
  const CacheStats s = with_vram_tier(ram, std::nullopt);
  ASSERT_EQ(s.budgets.size(), 1u);
  EXPECT_EQ(s.entries[0].bytes[kCudaIndex], 0);
  EXPECT_EQ(s.misses, 2);
}

TEST(TierStats, FoldsTheVramBudgetAndPlacementsIntoTheRamCache) {
  CacheStats ram;
  ram.budgets = {budget(Device::kCpu, 1000, 900)};
  ram.entries = {entry("a", 600, 0), entry("b", 300, 0)};
  ram.hits = 5;
  ram.misses = 2;
  ram.evictions = 1;
  CacheStats vram;
  // The tier's inner cache reports its empty RAM budget first.
  vram.budgets = {budget(Device::kCpu, 0, 0), budget(Device::kCuda, 4000, 700)};
  vram.entries = {entry("b", 0, 700)};
  vram.misses = 9;  // placements built: not the RAM cache's misses
  vram.evictions = 4;
  const CacheStats s = with_vram_tier(ram, vram);
  ASSERT_EQ(s.budgets.size(), 2u);
  EXPECT_EQ(s.budgets[1].device, Device::kCuda);
  EXPECT_EQ(s.budgets[1].capacity_bytes, 4000);
  EXPECT_EQ(s.budgets[1].committed_bytes, 700);
  ASSERT_EQ(s.entries.size(), 2u);
  EXPECT_EQ(s.entries[0].bytes[kCudaIndex], 0);
  EXPECT_EQ(s.entries[1].bytes[kCpuIndex], 300);
  EXPECT_EQ(s.entries[1].bytes[kCudaIndex], 700);
  EXPECT_EQ(s.hits, 5);
  EXPECT_EQ(s.misses, 2);
  EXPECT_EQ(s.evictions, 1);
}

TEST(TierStats, ReadsBothFromTheEngine) {
  testing::FakeEngine engine;
  CacheStats ram;
  ram.entries = {entry("a", 10, 0)};
  engine.stats_sequence = {ram};
  CacheStats vram;
  vram.budgets = {budget(Device::kCuda, 50, 20)};
  vram.entries = {entry("a", 0, 20)};
  engine.vram_sequence = {vram};
  const CacheStats s = both_tiers_stats(engine);
  EXPECT_EQ(s.entries[0].bytes[kCudaIndex], 20);
  ASSERT_EQ(s.budgets.size(), 1u);
  EXPECT_EQ(s.budgets[0].device, Device::kCuda);
}

}  // namespace
}  // namespace diffusiond
