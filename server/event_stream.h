// EventStream: a server-streaming call whose events come from a worker
// thread. gRPC allows one write in flight, so events queue here; progress
// events that a newer one supersedes are coalesced, so a slow client sees the
// latest state instead of holding an ever-growing backlog. The reactor
// deletes itself once gRPC is done with it, which happens only after the
// worker called finish().
#ifndef DIFFUSIOND_SERVER_EVENT_STREAM_H_
#define DIFFUSIOND_SERVER_EVENT_STREAM_H_

#include <grpcpp/grpcpp.h>

#include <deque>

#include "core/util/cancellation.h"
#include "core/util/mutex.h"
#include "server/cancellable_reactor.h"

namespace diffusiond {

template <typename Event>
class EventStream final : public grpc::ServerWriteReactor<Event> {
 public:
  EventStream() = default;

  // Queues `event` for the client. A `replaceable` event is dropped in favour
  // of the next replaceable one if it has not started writing yet. Events
  // sent after the client went away are discarded.
  void send(Event event, bool replaceable = false) {
    const Event* next = nullptr;
    {
      MutexLock lock(&mu_);
      if (finished_ || broken_) return;
      if (replaceable && !pending_.empty() && pending_.back().replaceable &&
          (pending_.size() > 1 || !writing_)) {
        pending_.back().event = std::move(event);
      } else {
        pending_.push_back({std::move(event), replaceable});
      }
      next = claim_next_locked();
    }
    // gRPC calls outside the lock: a reaction may run inline on this thread.
    if (next != nullptr) this->StartWrite(next);
  }

  // Ends the call with `status` once queued events are written. Call once,
  // last: the reactor may be gone when it returns.
  void finish(grpc::Status status) {
    bool now = false;
    {
      MutexLock lock(&mu_);
      finished_ = true;
      status_ = status;
      now = claim_finish_locked();
    }
    if (now) this->Finish(status);
  }

  // True once the client cancelled or its deadline passed.
  bool cancelled() const { return cancel_.cancelled(); }
  // Fires (CANCELLED) when the client cancels or its deadline passes; valid
  // after the reactor is gone.
  CancellationToken token() const { return cancel_.token(); }

  void OnWriteDone(bool ok) override {
    const Event* next = nullptr;
    bool finish_now = false;
    grpc::Status status;
    {
      MutexLock lock(&mu_);
      writing_ = false;
      pending_.pop_front();
      if (!ok) {
        broken_ = true;
        pending_.clear();
      }
      next = claim_next_locked();
      if (next == nullptr) finish_now = claim_finish_locked();
      status = status_;
    }
    if (next != nullptr) this->StartWrite(next);
    if (finish_now) this->Finish(status);
  }
  void OnCancel() override { cancel_.cancel(absl::CancelledError(kClientGaveUp)); }
  void OnDone() override { delete this; }

 private:
  struct Pending {
    Event event;
    bool replaceable;
  };

  // The event to write next, marking the write as started; null if one is
  // in flight or nothing waits. (Deque references survive push_back.)
  const Event* claim_next_locked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || pending_.empty()) return nullptr;
    writing_ = true;
    return &pending_.front().event;
  }
  // True exactly once: when finish() was called and no write is in flight.
  bool claim_finish_locked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!finished_ || writing_ || done_) return false;
    done_ = true;
    return true;
  }

  Mutex mu_;
  std::deque<Pending> pending_ ABSL_GUARDED_BY(mu_);  // front is being written while writing_
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status status_ ABSL_GUARDED_BY(mu_);
  CancellationSource cancel_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_EVENT_STREAM_H_
