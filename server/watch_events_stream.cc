#include "server/watch_events_stream.h"

#include <utility>
#include <variant>

#include "server/cancellable_reactor.h"
#include "server/grpc_status.h"
#include "server/model_info_wire.h"

namespace diffusiond {
namespace {

v1::WatchEvent::Kind wire_kind(CacheEvent::Kind kind) {
  switch (kind) {
    case CacheEvent::Kind::kLoaded:
      return v1::WatchEvent::KIND_LOADED;
    case CacheEvent::Kind::kLoadFailed:
      return v1::WatchEvent::KIND_LOAD_FAILED;
    case CacheEvent::Kind::kEvicted:
      return v1::WatchEvent::KIND_EVICTED;
    case CacheEvent::Kind::kUnloaded:
      return v1::WatchEvent::KIND_UNLOADED;
    case CacheEvent::Kind::kRejected:
      return v1::WatchEvent::KIND_REJECTED;
    case CacheEvent::Kind::kWaitedForRoom:
      return v1::WatchEvent::KIND_WAITED_FOR_ROOM;
  }
  return v1::WatchEvent::KIND_UNSPECIFIED;
}

}  // namespace

bool WatchEventsStream::to_wire(const EngineEvent& event, bool progress, v1::WatchEvent* wire) {
  if (const auto* p = std::get_if<LoadProgressEvent>(&event.what)) {
    if (!progress) return false;
    wire->set_kind(v1::WatchEvent::KIND_LOAD_PROGRESS);
    wire->set_tier("ram");
    wire->set_model_id(p->model_id);
    diffusiond::to_wire(p->progress, wire->mutable_progress());  // the class has its own to_wire
    return true;
  }
  const CacheEvent& e = std::get<CacheEvent>(event.what);
  wire->set_kind(wire_kind(e.kind));
  wire->set_tier(event.tier == EngineEvent::Tier::kVram ? "vram" : "ram");
  wire->set_model_id(e.key);
  wire->set_ram_bytes(e.bytes[kCpuIndex]);
  wire->set_vram_bytes(e.bytes[kCudaIndex]);
  wire->set_seconds(absl::ToDoubleSeconds(e.duration));
  wire->set_reason(e.reason);
  if (e.kind == CacheEvent::Kind::kLoadFailed || e.kind == CacheEvent::Kind::kRejected ||
      e.kind == CacheEvent::Kind::kWaitedForRoom) {
    wire->set_code(static_cast<int32_t>(e.status.code()));
    wire->set_message(std::string(e.status.message()));
  }
  return true;
}

v1::WatchEvent WatchEventsStream::snapshot(int64_t events_lost) const {
  v1::WatchEvent event;
  event.set_kind(v1::WatchEvent::KIND_SNAPSHOT);
  event.set_events_lost(events_lost);
  for (const ModelInfo& info : engine_->list()) diffusiond::to_wire(info, event.add_models());
  return event;
}

void WatchEventsStream::start(EngineEventFeed* feed) {
  absl::StatusOr<EngineEventFeed::Subscription> subscribed =
      feed != nullptr ? feed->subscribe(this) : absl::UnimplementedError("this server has no event feed");
  if (!subscribed.ok()) {
    {
      MutexLock lock(&mu_);
      started_ = true;
    }
    end(to_grpc_status(subscribed.status()));
    return;
  }
  subscription_ = *std::move(subscribed);
  if (metrics_ != nullptr) {
    metrics_->add_event_watchers(1);
    counted_ = true;
  }
  // After subscribing: whatever changes from here on is also an event.
  v1::WatchEvent first = snapshot(0);
  const v1::WatchEvent* next = nullptr;
  bool finish_now = false;
  grpc::Status status;
  {
    MutexLock lock(&mu_);
    pending_.push_front({std::move(first), false});
    started_ = true;
    next = claim_next_locked();
    if (next == nullptr) finish_now = claim_finish_locked();
    status = status_;
  }
  if (next != nullptr) StartWrite(next);
  if (finish_now) Finish(status);
}

void WatchEventsStream::on_event(const EngineEvent& event) {
  v1::WatchEvent wire;
  if (!to_wire(event, progress_, &wire)) return;
  const bool progress = wire.kind() == v1::WatchEvent::KIND_LOAD_PROGRESS;
  int64_t lost = 0;
  const v1::WatchEvent* next = nullptr;
  {
    MutexLock lock(&mu_);
    if (ending_) return;
    if (progress) {
      // The same model's progress not yet being written is superseded.
      for (size_t i = pending_.size(); i-- > (writing_ ? 1u : 0u);) {
        Pending& p = pending_[i];
        if (p.progress && p.event.model_id() == wire.model_id()) {
          p.event = std::move(wire);
          return;
        }
      }
    }
    if (pending_.size() < kMaxPending) {
      pending_.push_back({std::move(wire), progress});
      next = claim_next_locked();
    } else {
      // Dropped: every queued event not being written (a dropped snapshot
      // passes on the count it carried), and this one.
      lost = 1;
      for (size_t i = writing_ ? 1 : 0; i < pending_.size(); ++i) {
        const v1::WatchEvent& dropped = pending_[i].event;
        lost += dropped.kind() == v1::WatchEvent::KIND_SNAPSHOT ? dropped.events_lost() : 1;
      }
      pending_.resize(writing_ ? 1 : 0);
    }
  }
  if (lost > 0) {
    // Outside our lock (the engine takes the cache's); the feed's lock keeps
    // other events out meanwhile.
    v1::WatchEvent resync = snapshot(lost);
    MutexLock lock(&mu_);
    if (ending_) return;
    pending_.push_back({std::move(resync), false});
    next = claim_next_locked();
  }
  if (next != nullptr) StartWrite(next);
}

void WatchEventsStream::on_close(const absl::Status& why) { end(to_grpc_status(why)); }

void WatchEventsStream::OnCancel() { end(grpc::Status(grpc::StatusCode::CANCELLED, kClientGaveUp)); }

void WatchEventsStream::end(const grpc::Status& status) {
  bool finish_now = false;
  grpc::Status final_status;
  {
    MutexLock lock(&mu_);
    if (ending_) return;
    ending_ = true;
    status_ = status;
    // A client that gave up gets nothing more; a drain writes what is queued.
    if (status.error_code() == grpc::StatusCode::CANCELLED) pending_.resize(writing_ ? 1 : 0);
    finish_now = claim_finish_locked();
    final_status = status_;
  }
  if (finish_now) Finish(final_status);
}

void WatchEventsStream::OnWriteDone(bool ok) {
  const v1::WatchEvent* next = nullptr;
  bool finish_now = false;
  grpc::Status status;
  {
    MutexLock lock(&mu_);
    writing_ = false;
    pending_.pop_front();
    if (!ok) {
      // The client is gone.
      pending_.clear();
      if (!ending_) status_ = grpc::Status(grpc::StatusCode::CANCELLED, kClientGaveUp);
      ending_ = true;
    }
    next = claim_next_locked();
    if (next == nullptr) finish_now = claim_finish_locked();
    status = status_;
  }
  if (next != nullptr) StartWrite(next);
  if (finish_now) Finish(status);
}

void WatchEventsStream::OnDone() {
  // Waits for a delivery in flight; no event reaches this object afterwards.
  subscription_.reset();
  if (counted_) metrics_->add_event_watchers(-1);
  delete this;
}

const v1::WatchEvent* WatchEventsStream::claim_next_locked() {
  if (!started_ || writing_ || pending_.empty()) return nullptr;
  writing_ = true;
  return &pending_.front().event;
}

bool WatchEventsStream::claim_finish_locked() {
  if (!started_ || !ending_ || writing_ || !pending_.empty() || finished_) return false;
  finished_ = true;
  return true;
}

}  // namespace diffusiond
