// Cancellation: one token type for every operation that can be stopped — a
// load, an unload waiting for pins, a denoise loop, one forward, a whole
// Generate. A CancellationSource is owned by whoever may stop the work (the
// gRPC reactor for its client, the engine for the drain); the work holds
// cheap CancellationTokens and checks, waits on or subscribes to them. A
// source may be linked to other tokens (client + drain), and carries the
// reason it was cancelled, so the work can answer CANCELLED to a client that
// gave up and UNAVAILABLE to one the daemon stopped.
//
// Not here: stopping a thread mid-forward (cancellation_scope.h), or
// deciding when a deadline passes (clock.h).
#ifndef DIFFUSIOND_CORE_UTIL_CANCELLATION_H_
#define DIFFUSIOND_CORE_UTIL_CANCELLATION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/util/clock.h"

namespace diffusiond {

namespace cancellation_internal {
class State;
}  // namespace cancellation_internal

// A subscription made by CancellationToken::on_cancel(). Destroying it (or
// reset()) unsubscribes; if the callback is running on another thread it
// first waits for it to return, so the callback may use objects that die
// after the subscription. Move-only.
class CancellationCallback {
 public:
  CancellationCallback() = default;
  CancellationCallback(CancellationCallback&& other) noexcept;
  CancellationCallback& operator=(CancellationCallback&& other) noexcept;
  ~CancellationCallback() { reset(); }
  void reset();

 private:
  friend class CancellationToken;
  CancellationCallback(std::shared_ptr<cancellation_internal::State> state, uint64_t id)
      : state_(std::move(state)), id_(id) {}
  std::shared_ptr<cancellation_internal::State> state_;
  uint64_t id_ = 0;
};

// A view of one source's cancellation. Copyable and cheap; a
// default-constructed token is never cancelled. Thread-safe.
class CancellationToken {
 public:
  CancellationToken() = default;

  // Returns whether the source was cancelled: one atomic load.
  bool cancelled() const;
  // Returns OK until cancelled, then the reason given to cancel().
  absl::Status status() const;
  // Waits on `clock` until cancelled or `deadline`; returns cancelled().
  bool wait_until(Clock* clock, absl::Time deadline) const;
  // Runs `callback` once when the source is cancelled, on the cancelling
  // thread (at once, on this thread, if it already is). REQUIRES: the
  // callback is quick and takes no lock the canceller may hold.
  [[nodiscard]] CancellationCallback on_cancel(std::function<void()> callback) const;

 private:
  friend class CancellationSource;
  explicit CancellationToken(std::shared_ptr<cancellation_internal::State> state) : state_(std::move(state)) {}
  std::shared_ptr<cancellation_internal::State> state_;
};

// The owner's side: cancel() stops every holder of a token. Thread-safe;
// tokens stay valid after the source is destroyed (they then never fire,
// unless they already had).
class CancellationSource {
 public:
  CancellationSource();
  // A source that is also cancelled, with the same reason, as soon as any
  // of `parents` is (at once if one already is). The link ends with this
  // source, so a long-lived parent gathers no subscriptions.
  explicit CancellationSource(const std::vector<CancellationToken>& parents);
  CancellationSource(const CancellationSource&) = delete;
  CancellationSource& operator=(const CancellationSource&) = delete;
  ~CancellationSource();

  // Cancels with `reason` (CANCELLED if not given; an OK reason becomes
  // CANCELLED): wakes every waiter and runs every callback. Only the first
  // call counts; later ones do nothing.
  void cancel(absl::Status reason = absl::CancelledError("cancelled"));
  bool cancelled() const { return token().cancelled(); }
  CancellationToken token() const { return CancellationToken(state_); }

 private:
  std::shared_ptr<cancellation_internal::State> state_;
  std::vector<CancellationCallback> links_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_UTIL_CANCELLATION_H_
