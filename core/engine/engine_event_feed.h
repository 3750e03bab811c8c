// EngineEventFeed: the engine's events — the RAM cache's and the VRAM
// tier's (loaded, load failed, evicted with its reason, unloaded, rejected,
// waited for room) and each load's progress — fanned out to subscribers that
// come and go (the daemon's WatchEvents streams). CacheObserverList is the
// fixed fan-out for the daemon's log and metrics; this one is dynamic.
//
// Not here: queueing for a slow subscriber (each subscriber bounds its own
// queue; on_event must not block), the wire (server/watch_events_stream.h).
#ifndef DIFFUSIOND_CORE_ENGINE_ENGINE_EVENT_FEED_H_
#define DIFFUSIOND_CORE_ENGINE_ENGINE_EVENT_FEED_H_

#include <cstdint>
#include <map>
#include <string>
#include <variant>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/cache/cache_observer.h"
#include "core/loader/streaming_loader.h"
#include "core/util/mutex.h"

namespace diffusiond {

// A load's progress, as the engine publishes it to the load's waiters.
struct LoadProgressEvent {
  std::string model_id;
  LoadProgress progress;
};

struct EngineEvent {
  // Which cache a CacheEvent comes from: the models in RAM, or their
  // placements on the device (where "evicted" means evicted to RAM).
  enum class Tier { kRam, kVram };
  Tier tier = Tier::kRam;
  std::variant<CacheEvent, LoadProgressEvent> what;
};

// Thread-safe. Events are delivered under the feed's lock, in the order the
// feed receives them, on the thread that caused them (after the cache let go
// of its lock), so a subscriber's on_event must be quick and must not block.
class EngineEventFeed {
 public:
  class Subscriber {
   public:
    virtual ~Subscriber() = default;
    virtual void on_event(const EngineEvent& event) = 0;
    // The feed closed (the daemon drains): no event follows. Called at most
    // once, under the feed's lock.
    virtual void on_close(const absl::Status& why) = 0;
  };

  // Unsubscribes when destroyed or reset(); once that returns, the
  // subscriber is called no more (a delivery in flight has finished).
  // Move-only. The feed must outlive it.
  class Subscription {
   public:
    Subscription() = default;
    Subscription(Subscription&& other) noexcept : feed_(other.feed_), id_(other.id_) { other.feed_ = nullptr; }
    Subscription& operator=(Subscription&& other) noexcept;
    ~Subscription() { reset(); }
    void reset();

   private:
    friend class EngineEventFeed;
    Subscription(EngineEventFeed* feed, uint64_t id) : feed_(feed), id_(id) {}
    EngineEventFeed* feed_ = nullptr;
    uint64_t id_ = 0;
  };

  EngineEventFeed();
  EngineEventFeed(const EngineEventFeed&) = delete;
  EngineEventFeed& operator=(const EngineEventFeed&) = delete;

  // `subscriber` gets every event from now on; it must outlive the
  // subscription. UNAVAILABLE (the close reason) once the feed is closed.
  absl::StatusOr<Subscription> subscribe(Subscriber* subscriber);

  // Where the RAM cache and the VRAM tier report (EngineOptions::observer,
  // vram_observer, beside the log and metrics).
  CacheObserver* ram_observer() { return &ram_; }
  CacheObserver* vram_observer() { return &vram_; }
  // EngineOptions::on_load_progress.
  void on_load_progress(const std::string& model_id, const LoadProgress& progress);

  // Tells every subscriber on_close(why) and refuses new ones.
  void close(const absl::Status& why);
  int subscribers() const;

 private:
  class TierObserver final : public CacheObserver {
   public:
    TierObserver(EngineEventFeed* feed, EngineEvent::Tier tier) : feed_(feed), tier_(tier) {}
    void on_cache_event(const CacheEvent& event) override;

   private:
    EngineEventFeed* const feed_;
    const EngineEvent::Tier tier_;
  };
  void deliver(const EngineEvent& event);
  void unsubscribe(uint64_t id);

  TierObserver ram_;
  TierObserver vram_;
  mutable Mutex mu_;
  std::map<uint64_t, Subscriber*> subscribers_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  absl::Status closed_ ABSL_GUARDED_BY(mu_);  // OK while open
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_ENGINE_ENGINE_EVENT_FEED_H_
