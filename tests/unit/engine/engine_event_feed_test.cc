// EngineEventFeed: fan-out of both tiers' cache events and load progress to
// subscribers that come and go; close() ends every subscriber once and
// refuses new ones.
#include "core/engine/engine_event_feed.h"

#include <string>
#include <variant>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Writes each event as "<tier>:<kind>:<key>" or "progress:<model>:<tensors>".
class FeedRecorder final : public EngineEventFeed::Subscriber {
 public:
  void on_event(const EngineEvent& event) override {
    if (const auto* p = std::get_if<LoadProgressEvent>(&event.what)) {
      seen.push_back("progress:" + p->model_id + ":" + std::to_string(p->progress.tensors_done));
      return;
    }
    const CacheEvent& e = std::get<CacheEvent>(event.what);
    seen.push_back(std::string(event.tier == EngineEvent::Tier::kVram ? "vram" : "ram") + ":" +
                   std::to_string(static_cast<int>(e.kind)) + ":" + e.key);
  }
  void on_close(const absl::Status& why) override { closes.push_back(why); }

  std::vector<std::string> seen;
  std::vector<absl::Status> closes;
};

CacheEvent feed_cache_event(CacheEvent::Kind kind, const std::string& key) {
  CacheEvent e;
  e.kind = kind;
  e.key = key;
  return e;
}

TEST(EngineEventFeed, DeliversBothTiersAndProgressInOrder) {
  EngineEventFeed feed;
  FeedRecorder a;
  absl::StatusOr<EngineEventFeed::Subscription> sub = feed.subscribe(&a);
  ASSERT_TRUE(sub.ok());
  EXPECT_EQ(feed.subscribers(), 1);
  feed.on_load_progress("m", LoadProgress{10, 100, 1, 10, {}});
  feed.ram_observer()->on_cache_event(feed_cache_event(CacheEvent::Kind::kLoaded, "m"));
  feed.vram_observer()->on_cache_event(feed_cache_event(CacheEvent::Kind::kEvicted, "m"));
  EXPECT_THAT(a.seen, ElementsAre("progress:m:1", "ram:0:m", "vram:2:m"));
}

TEST(EngineEventFeed, AnUnsubscribedSubscriberHearsNothingMore) {
  EngineEventFeed feed;
  FeedRecorder a, b;
  absl::StatusOr<EngineEventFeed::Subscription> sa = feed.subscribe(&a);
  absl::StatusOr<EngineEventFeed::Subscription> sb = feed.subscribe(&b);
  ASSERT_TRUE(sa.ok() && sb.ok());
  feed.ram_observer()->on_cache_event(feed_cache_event(CacheEvent::Kind::kLoaded, "x"));
  sa->reset();
  EXPECT_EQ(feed.subscribers(), 1);
  feed.ram_observer()->on_cache_event(feed_cache_event(CacheEvent::Kind::kUnloaded, "x"));
  EXPECT_THAT(a.seen, ElementsAre("ram:0:x"));
  EXPECT_THAT(b.seen, ElementsAre("ram:0:x", "ram:3:x"));
  // Moving a subscription keeps it; destroying the moved-to one ends it.
  { EngineEventFeed::Subscription moved = *std::move(sb); }
  EXPECT_EQ(feed.subscribers(), 0);
}

TEST(EngineEventFeed, CloseEndsEverySubscriberOnceAndRefusesNewOnes) {
  EngineEventFeed feed;
  FeedRecorder a;
  absl::StatusOr<EngineEventFeed::Subscription> sub = feed.subscribe(&a);
  ASSERT_TRUE(sub.ok());
  feed.close(absl::UnavailableError("shutting down"));
  feed.close(absl::UnavailableError("again"));
  ASSERT_EQ(a.closes.size(), 1u);
  EXPECT_THAT(a.closes[0], StatusIs(absl::StatusCode::kUnavailable, HasSubstr("shutting down")));
  feed.ram_observer()->on_cache_event(feed_cache_event(CacheEvent::Kind::kLoaded, "late"));
  EXPECT_TRUE(a.seen.empty());
  FeedRecorder b;
  EXPECT_THAT(feed.subscribe(&b).status(), StatusIs(absl::StatusCode::kUnavailable, HasSubstr("shutting down")));
  sub->reset();  // after close: harmless
}

}  // namespace
}  // namespace diffusiond
