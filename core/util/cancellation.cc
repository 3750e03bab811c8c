#include "core/util/cancellation.h"

#include <atomic>
#include <map>
#include <thread>
#include <utility>

#include "core/util/mutex.h"

namespace diffusiond {
namespace cancellation_internal {

// The state a source shares with its tokens.
class State {
 public:
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

  // A copy with its own rep: copies share a refcount whose ordering TSan
  // cannot see in Debian's libabsl, and the reason crosses threads.
  absl::Status status() {
    if (!cancelled()) return absl::OkStatus();
    MutexLock lock(&mu_);
    return absl::Status(reason_.code(), reason_.message());
  }

  bool wait_until(Clock* clock, absl::Time deadline) {
    MutexLock lock(&mu_);
    while (!cancelled()) {
      if (clock->wait_until(&cv_, &mu_, deadline)) return cancelled();
    }
    return true;
  }

  // Returns the subscription's id, or 0 if the state was already cancelled
  // (the caller then runs the callback itself).
  uint64_t subscribe(std::function<void()> callback) {
    MutexLock lock(&mu_);
    if (cancelled()) return 0;
    const uint64_t id = next_id_++;
    callbacks_.emplace(id, std::move(callback));
    return id;
  }

  void unsubscribe(uint64_t id) {
    MutexLock lock(&mu_);
    if (callbacks_.erase(id) > 0) return;
    // Running on another thread: wait, so its captures outlive it. On this
    // thread (a callback dropping its own subscription), waiting would hang.
    while (running_ == id && running_thread_ != std::this_thread::get_id()) callback_done_.wait(&mu_);
  }

  void cancel(absl::Status reason) {
    {
      MutexLock lock(&mu_);
      if (cancelled()) return;
      reason_ = reason.ok() ? absl::CancelledError("cancelled") : absl::Status(reason.code(), reason.message());
      cancelled_.store(true, std::memory_order_release);
      cv_.signal_all();
    }
    // Callbacks run one at a time, outside the lock, so they may subscribe,
    // unsubscribe or cancel other sources.
    for (;;) {
      std::function<void()> callback;
      {
        MutexLock lock(&mu_);
        running_ = 0;
        callback_done_.signal_all();
        if (callbacks_.empty()) return;
        running_ = callbacks_.begin()->first;
        running_thread_ = std::this_thread::get_id();
        callback = std::move(callbacks_.begin()->second);
        callbacks_.erase(callbacks_.begin());
      }
      callback();
    }
  }

 private:
  std::atomic<bool> cancelled_{false};
  Mutex mu_;
  CondVar cv_;             // waiters in wait_until
  CondVar callback_done_;  // unsubscribers of a running callback
  absl::Status reason_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, std::function<void()>> callbacks_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t running_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread::id running_thread_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cancellation_internal

using cancellation_internal::State;

CancellationCallback::CancellationCallback(CancellationCallback&& other) noexcept
    : state_(std::move(other.state_)), id_(std::exchange(other.id_, 0)) {}

CancellationCallback& CancellationCallback::operator=(CancellationCallback&& other) noexcept {
  if (this != &other) {
    reset();
    state_ = std::move(other.state_);
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

void CancellationCallback::reset() {
  if (state_ != nullptr && id_ != 0) state_->unsubscribe(id_);
  state_.reset();
  id_ = 0;
}

bool CancellationToken::cancelled() const { return state_ != nullptr && state_->cancelled(); }

absl::Status CancellationToken::status() const { return state_ == nullptr ? absl::OkStatus() : state_->status(); }

bool CancellationToken::wait_until(Clock* clock, absl::Time deadline) const {
  if (state_ != nullptr) return state_->wait_until(clock, deadline);
  // Never cancelled: only the deadline ends the wait.
  clock->sleep_until(deadline);
  return false;
}

CancellationCallback CancellationToken::on_cancel(std::function<void()> callback) const {
  if (state_ == nullptr) return CancellationCallback();
  const uint64_t id = state_->subscribe(callback);
  if (id == 0) {
    callback();
    return CancellationCallback();
  }
  return CancellationCallback(state_, id);
}

CancellationSource::CancellationSource() : state_(std::make_shared<State>()) {}

CancellationSource::CancellationSource(const std::vector<CancellationToken>& parents) : CancellationSource() {
  for (const CancellationToken& parent : parents) {
    // A weak link: the parent must not keep this state alive.
    std::weak_ptr<State> weak = state_;
    links_.push_back(parent.on_cancel([weak, parent] {
      if (std::shared_ptr<State> state = weak.lock()) state->cancel(parent.status());
    }));
  }
}

CancellationSource::~CancellationSource() = default;

void CancellationSource::cancel(absl::Status reason) { state_->cancel(std::move(reason)); }

}  // namespace diffusiond
