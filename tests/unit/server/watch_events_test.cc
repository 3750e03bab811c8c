// WatchEvents over a fake engine and a real event feed, through a real gRPC
// channel on loopback: the snapshot comes first, events follow in order, a
// client that does not read loses events to a fresh snapshot instead of
// holding the feed, the client's cancel and the feed's close end the stream.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "core/engine/engine_event_feed.h"
#include "diffusiond/v1/cache_service.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/cache_service.h"
#include "tests/testing/fake_engine.h"
#include "tests/testing/service_harness.h"

namespace diffusiond {
namespace {

using ::testing::HasSubstr;

CacheEvent watched_event(CacheEvent::Kind kind, const std::string& key) {
  CacheEvent e;
  e.kind = kind;
  e.key = key;
  e.bytes[kCpuIndex] = 300;
  if (kind == CacheEvent::Kind::kEvicted) e.reason = "least recently used";
  return e;
}

// Waits (on the condition, up to a generous bound) until the feed has `n`
// subscribers: a stream subscribes in its handler and leaves in OnDone.
bool await_subscribers(const EngineEventFeed& feed, int n) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (feed.subscribers() != n) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

class WatchEventsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ModelInfo a;
    a.model_id = "resident";
    engine_.models = {a};
  }
  EngineEventFeed feed_;  // outlives the harness: streams unsubscribe when gRPC is done with them
  testing::FakeEngine engine_;
  testing::ServiceHarness<CacheServiceImpl, v1::CacheService> harness_{&engine_, &feed_};
};

TEST_F(WatchEventsTest, SnapshotFirstThenEventsInOrderUntilTheClientCancels) {
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<v1::WatchEvent>> reader =
      harness_.stub()->WatchEvents(&context, v1::WatchEventsRequest());
  v1::WatchEvent event;
  ASSERT_TRUE(reader->Read(&event));
  EXPECT_EQ(event.kind(), v1::WatchEvent::KIND_SNAPSHOT);
  ASSERT_EQ(event.models_size(), 1);
  EXPECT_EQ(event.models(0).model_id(), "resident");
  ASSERT_EQ(feed_.subscribers(), 1);  // subscribed before the snapshot was written

  feed_.on_load_progress("m", LoadProgress{100, 300, 1, 3, {}, 80});
  feed_.ram_observer()->on_cache_event(watched_event(CacheEvent::Kind::kLoaded, "m"));
  feed_.ram_observer()->on_cache_event(watched_event(CacheEvent::Kind::kEvicted, "m"));
  feed_.vram_observer()->on_cache_event(watched_event(CacheEvent::Kind::kEvicted, "m"));
  ASSERT_TRUE(reader->Read(&event));
  EXPECT_EQ(event.kind(), v1::WatchEvent::KIND_LOAD_PROGRESS);
  EXPECT_EQ(event.progress().tensors_done(), 1);
  EXPECT_EQ(event.progress().reused_bytes(), 80);
  ASSERT_TRUE(reader->Read(&event));
  EXPECT_EQ(event.kind(), v1::WatchEvent::KIND_LOADED);
  EXPECT_EQ(event.ram_bytes(), 300);
  ASSERT_TRUE(reader->Read(&event));
  EXPECT_EQ(event.kind(), v1::WatchEvent::KIND_EVICTED);
  EXPECT_EQ(event.tier(), "ram");
  EXPECT_EQ(event.reason(), "least recently used");
  ASSERT_TRUE(reader->Read(&event));
  EXPECT_EQ(event.tier(), "vram");

  context.TryCancel();
  while (reader->Read(&event)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(await_subscribers(feed_, 0));
}

TEST_F(WatchEventsTest, NoProgressLeavesLoadProgressOut) {
  grpc::ClientContext context;
  v1::WatchEventsRequest request;
  request.set_no_progress(true);
  std::unique_ptr<grpc::ClientReader<v1::WatchEvent>> reader = harness_.stub()->WatchEvents(&context, request);
  v1::WatchEvent event;
  ASSERT_TRUE(reader->Read(&event));
  feed_.on_load_progress("m", LoadProgress{100, 300, 1, 3, {}});
  feed_.ram_observer()->on_cache_event(watched_event(CacheEvent::Kind::kUnloaded, "m"));
  ASSERT_TRUE(reader->Read(&event));
  EXPECT_EQ(event.kind(), v1::WatchEvent::KIND_UNLOADED);
  context.TryCancel();
  while (reader->Read(&event)) {
  }
  reader->Finish();
  EXPECT_TRUE(await_subscribers(feed_, 0));
}

TEST_F(WatchEventsTest, AClientThatDoesNotReadLosesEventsToAFreshSnapshot) {
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<v1::WatchEvent>> reader =
      harness_.stub()->WatchEvents(&context, v1::WatchEventsRequest());
  v1::WatchEvent event;
  ASSERT_TRUE(reader->Read(&event));
  // 1,000 events of 64 KiB, far more than the transport buffers while the
  // client reads nothing: the stream's queue (256) overflows, and the feed
  // never waits for it.
  const std::string big(64 << 10, 'x');
  for (int i = 0; i < 1000; ++i) feed_.ram_observer()->on_cache_event(watched_event(CacheEvent::Kind::kLoaded, big));
  feed_.ram_observer()->on_cache_event(watched_event(CacheEvent::Kind::kUnloaded, "last"));
  // Every one of the 1,001 events is either written or counted as lost.
  int64_t lost = 0;
  int64_t written = 0;
  while (written + lost < 1001 && reader->Read(&event)) {
    if (event.kind() == v1::WatchEvent::KIND_SNAPSHOT) {
      EXPECT_GT(event.events_lost(), 0);
      EXPECT_EQ(event.models_size(), 1);
      lost += event.events_lost();
    } else {
      ++written;
    }
  }
  EXPECT_GT(lost, 0);
  EXPECT_EQ(written + lost, 1001);
  context.TryCancel();
  while (reader->Read(&event)) {
  }
  reader->Finish();
  EXPECT_TRUE(await_subscribers(feed_, 0));
}

TEST_F(WatchEventsTest, ClosingTheFeedEndsTheStreamWithUnavailable) {
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<v1::WatchEvent>> reader =
      harness_.stub()->WatchEvents(&context, v1::WatchEventsRequest());
  v1::WatchEvent event;
  ASSERT_TRUE(reader->Read(&event));
  feed_.ram_observer()->on_cache_event(watched_event(CacheEvent::Kind::kLoaded, "m"));
  feed_.close(absl::UnavailableError("the daemon is shutting down"));
  ASSERT_TRUE(reader->Read(&event));  // what was queued before the close is written
  EXPECT_EQ(event.kind(), v1::WatchEvent::KIND_LOADED);
  EXPECT_FALSE(reader->Read(&event));
  const grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(status.error_message(), HasSubstr("shutting down"));

  // A watch after the close is refused at once.
  grpc::ClientContext late;
  std::unique_ptr<grpc::ClientReader<v1::WatchEvent>> refused =
      harness_.stub()->WatchEvents(&late, v1::WatchEventsRequest());
  EXPECT_FALSE(refused->Read(&event));
  EXPECT_EQ(refused->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
}

}  // namespace
}  // namespace diffusiond
