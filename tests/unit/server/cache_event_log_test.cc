#include "server/cache_event_log.h"

#include <memory>
#include <string>
#include <vector>

#include "core/cache/model_cache.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace diffusiond {
namespace {

using ::testing::HasSubstr;

class Empty : public CacheValue {};

TEST(CacheEventLog, OneLinePerLoadEvictionRejectionAndUnload) {
  Budget ram(Device::kCpu, 1000);
  std::vector<std::string> lines;
  CacheEventLog log(&ram, [&](absl::string_view line) { lines.emplace_back(line); });
  ModelCacheOptions options;
  options.ram_budget = &ram;
  options.observer = &log;
  std::unique_ptr<ModelCache> cache = std::move(*ModelCache::create(options));
  const auto loader = [&](int64_t bytes) {
    return [&, bytes]() -> absl::StatusOr<LoadedValue> {
      absl::StatusOr<Reservation> r = cache->make_room(bytes, Device::kCpu);
      if (!r.ok()) return r.status();
      if (absl::Status s = r->charge(bytes); !s.ok()) return s;
      LoadedValue v;
      v.value = std::make_unique<Empty>();
      v.reservations.push_back(std::move(*r));
      return v;
    };
  };
  ASSERT_TRUE(cache->get_or_load("models/a b.safetensors", loader(600)).ok());
  ASSERT_TRUE(cache->get_or_load("b", loader(600)).ok());  // evicts a
  ASSERT_FALSE(cache->get_or_load("c", loader(2000)).ok());  // rejected, then a failed load
  ASSERT_TRUE(cache->unload("b").ok());
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_THAT(lines[0], HasSubstr("event=loaded model=\"models/a b.safetensors\" ram_bytes=600 seconds="));
  EXPECT_THAT(lines[0], HasSubstr("committed_bytes=600 reserved_bytes=0 available_bytes=400"));
  EXPECT_THAT(lines[1], HasSubstr("event=evicted model=\"models/a b.safetensors\" ram_bytes=600"));
  EXPECT_THAT(lines[3], HasSubstr("event=rejected ram_bytes=2000 code=RESOURCE_EXHAUSTED error=\"cannot make room"));
  EXPECT_THAT(lines[4], HasSubstr("event=load_failed model=c"));
  EXPECT_THAT(lines[5], HasSubstr("event=unloaded model=b ram_bytes=600 budget_bytes=1000 committed_bytes=0"));
}

TEST(CacheEventLog, TheVramTiersEventsAreMarkedAndNamedForPlacements) {
  Budget vram(Device::kCuda, 1000);
  std::vector<std::string> lines;
  CacheEventLog log(&vram, [&](absl::string_view line) { lines.emplace_back(line); });
  CacheEvent placed;
  placed.kind = CacheEvent::Kind::kLoaded;
  placed.key = "a";
  placed.bytes = {0, 600};
  placed.duration = absl::Milliseconds(250);
  log.on_cache_event(placed);
  CacheEvent evicted = placed;
  evicted.kind = CacheEvent::Kind::kEvicted;
  log.on_cache_event(evicted);
  CacheEvent dropped = placed;
  dropped.kind = CacheEvent::Kind::kUnloaded;
  log.on_cache_event(dropped);
  CacheEvent rejected;
  rejected.kind = CacheEvent::Kind::kRejected;
  rejected.device = Device::kCuda;
  rejected.bytes = {0, 2000};
  rejected.status = absl::ResourceExhaustedError("cannot make room");
  log.on_cache_event(rejected);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_THAT(lines[0], HasSubstr("tier=vram event=placed model=a vram_bytes=600 seconds=0.250 budget_bytes=1000"));
  EXPECT_THAT(lines[1], HasSubstr("tier=vram event=evicted_to_ram model=a vram_bytes=600"));
  EXPECT_THAT(lines[2], HasSubstr("tier=vram event=dropped model=a vram_bytes=600"));
  EXPECT_THAT(lines[3], HasSubstr("tier=vram event=rejected vram_bytes=2000 code=RESOURCE_EXHAUSTED"));
  for (const std::string& line : lines) EXPECT_THAT(line, ::testing::Not(HasSubstr("ram_bytes=0")));
}

}  // namespace
}  // namespace diffusiond
