// WatchEventsStream: one WatchEvents call — a subscriber of the engine's
// event feed that writes each event to its client, after a snapshot of the
// resident models.
//
// Ordering: it subscribes first and takes the snapshot second, so no event
// falls between the two (some may repeat what the snapshot shows); events
// that arrive meanwhile wait behind the snapshot.
// A slow client: the queue holds at most kMaxPending events, and a pending
// progress event is replaced by the same model's next one. On overflow the
// queued events are dropped and a fresh snapshot carrying the number lost
// takes their place, so the cache never waits for a client.
// It ends on the client's cancel (CANCELLED) or the feed's close (the
// drain: UNAVAILABLE), after the events queued before.
#ifndef DIFFUSIOND_SERVER_WATCH_EVENTS_STREAM_H_
#define DIFFUSIOND_SERVER_WATCH_EVENTS_STREAM_H_

#include <grpcpp/grpcpp.h>

#include <cstddef>
#include <deque>
#include <string>

#include "core/engine/engine_api.h"
#include "core/engine/engine_event_feed.h"
#include "core/util/mutex.h"
#include "diffusiond/v1/cache_service.pb.h"
#include "server/metrics.h"

namespace diffusiond {

// Owned by gRPC: it deletes itself when the call is done. Thread-safe.
class WatchEventsStream final : public grpc::ServerWriteReactor<v1::WatchEvent>, public EngineEventFeed::Subscriber {
 public:
  static constexpr size_t kMaxPending = 256;

  // `engine` answers the snapshots; `metrics` (optional) counts open
  // streams. Both must outlive the call.
  WatchEventsStream(const EngineApi* engine, DaemonMetrics* metrics, bool progress)
      : engine_(engine), metrics_(metrics), progress_(progress) {}

  // Subscribes to `feed` and writes the first snapshot; a closed feed ends
  // the call at once (UNIMPLEMENTED for none). Call once, from the handler.
  void start(EngineEventFeed* feed);

  void on_event(const EngineEvent& event) override;
  void on_close(const absl::Status& why) override;

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

  // The wire event for `event`; false for one a watcher does not get (load
  // progress when `progress` is off).
  static bool to_wire(const EngineEvent& event, bool progress, v1::WatchEvent* wire);

 private:
  struct Pending {
    v1::WatchEvent event;
    bool progress = false;  // replaceable by the same model's next progress
  };
  v1::WatchEvent snapshot(int64_t events_lost) const;
  // The event to write next, marking the write started; null if one is in
  // flight, nothing waits, or the snapshot is not queued yet.
  const v1::WatchEvent* claim_next_locked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // True exactly once: when the call is to end and no write is in flight.
  bool claim_finish_locked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void end(const grpc::Status& status);

  const EngineApi* const engine_;
  DaemonMetrics* const metrics_;
  const bool progress_;
  bool counted_ = false;                        // in metrics_; set by start(), read by OnDone
  EngineEventFeed::Subscription subscription_;  // set by start(), reset in OnDone

  Mutex mu_;
  std::deque<Pending> pending_ ABSL_GUARDED_BY(mu_);  // front is being written while writing_
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool ending_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_WATCH_EVENTS_STREAM_H_
