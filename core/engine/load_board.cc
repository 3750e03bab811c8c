#include "core/engine/load_board.h"

#include <vector>

namespace diffusiond {

void LoadBoard::Load::publish(const LoadProgress& progress) {
  // Watchers run under the lock so that a leaving caller's callback is never
  // invoked after it left; callbacks only queue an event.
  MutexLock lock(&mu_);
  last_ = progress;
  bool anyone_waiting = false;
  for (auto& [id, w] : watchers_) {
    if (w.on_progress) w.on_progress(progress);
    if (!w.cancel.cancelled()) anyone_waiting = true;
  }
  if (!anyone_waiting) cancel_.cancel(absl::CancelledError("every caller cancelled the load"));
}

LoadBoard::Ticket::~Ticket() {
  if (load_ != nullptr) board_->leave(key_, load_, id_);
}

LoadBoard::Ticket LoadBoard::join(const std::string& key, Watcher watcher) {
  std::shared_ptr<Load> load;
  {
    MutexLock lock(&mu_);
    std::shared_ptr<Load>& slot = loads_[key];
    // A load everyone gave up on is not joined: its callers may not have
    // left yet, but a newcomer wants a live load.
    if (slot == nullptr || (slot->cancel_.cancelled() && cancelled_all_.ok())) slot = std::make_shared<Load>();
    load = slot;
    if (!cancelled_all_.ok()) load->cancel(cancelled_all_);
  }
  MutexLock lock(&load->mu_);
  if (load->last_.has_value() && watcher.on_progress) watcher.on_progress(*load->last_);
  const int id = load->next_id_++;
  load->watchers_.emplace(id, std::move(watcher));
  return Ticket(this, key, load, id);
}

void LoadBoard::leave(const std::string& key, const std::shared_ptr<Load>& load, int id) {
  bool empty = false;
  {
    MutexLock lock(&load->mu_);
    load->watchers_.erase(id);
    empty = load->watchers_.empty();
  }
  if (!empty) return;
  MutexLock lock(&mu_);
  // A new caller may have joined (and be waiting) since; keep its record.
  const auto it = loads_.find(key);
  if (it != loads_.end() && it->second == load) {
    MutexLock inner(&load->mu_);
    if (load->watchers_.empty()) loads_.erase(it);
  }
}

void LoadBoard::cancel_all(const absl::Status& reason) {
  MutexLock lock(&mu_);
  cancelled_all_ = reason;
  for (auto& [key, load] : loads_) load->cancel(reason);
}

}  // namespace diffusiond
