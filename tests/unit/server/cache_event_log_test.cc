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

}  // namespace
}  // namespace diffusiond
