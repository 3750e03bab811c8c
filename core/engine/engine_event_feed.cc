#include "core/engine/engine_event_feed.h"

#include <utility>

namespace diffusiond {

EngineEventFeed::Subscription& EngineEventFeed::Subscription::operator=(Subscription&& other) noexcept {
  if (this != &other) {
    reset();
    feed_ = other.feed_;
    id_ = other.id_;
    other.feed_ = nullptr;
  }
  return *this;
}

void EngineEventFeed::Subscription::reset() {
  if (feed_ != nullptr) feed_->unsubscribe(id_);
  feed_ = nullptr;
}

EngineEventFeed::EngineEventFeed() : ram_(this, EngineEvent::Tier::kRam), vram_(this, EngineEvent::Tier::kVram) {}

absl::StatusOr<EngineEventFeed::Subscription> EngineEventFeed::subscribe(Subscriber* subscriber) {
  MutexLock lock(&mu_);
  if (!closed_.ok()) return closed_;
  const uint64_t id = next_id_++;
  subscribers_.emplace(id, subscriber);
  return Subscription(this, id);
}

void EngineEventFeed::unsubscribe(uint64_t id) {
  // Taking the lock waits for a delivery in flight: afterwards the
  // subscriber is not called again and may be destroyed.
  MutexLock lock(&mu_);
  subscribers_.erase(id);
}

void EngineEventFeed::TierObserver::on_cache_event(const CacheEvent& event) {
  EngineEvent e;
  e.tier = tier_;
  e.what = event;
  feed_->deliver(e);
}

void EngineEventFeed::on_load_progress(const std::string& model_id, const LoadProgress& progress) {
  EngineEvent e;
  e.what = LoadProgressEvent{model_id, progress};
  deliver(e);
}

void EngineEventFeed::deliver(const EngineEvent& event) {
  MutexLock lock(&mu_);
  for (const auto& [id, subscriber] : subscribers_) subscriber->on_event(event);
}

void EngineEventFeed::close(const absl::Status& why) {
  MutexLock lock(&mu_);
  if (!closed_.ok()) return;
  closed_ = why.ok() ? absl::UnavailableError("the event feed closed") : why;
  for (const auto& [id, subscriber] : subscribers_) subscriber->on_close(closed_);
  subscribers_.clear();
}

int EngineEventFeed::subscribers() const {
  MutexLock lock(&mu_);
  return static_cast<int>(subscribers_.size());
}

}  // namespace diffusiond
