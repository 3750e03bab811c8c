// LoadBoard: where concurrent requests for the same model meet. The cache
// already runs one loader per key; the board gives every caller waiting on
// that loader its progress events, and cancels the loader only when every
// caller has given up (or the daemon drains) — one impatient client cannot
// kill a load others wait for.
#ifndef DIFFUSIOND_CORE_ENGINE_LOAD_BOARD_H_
#define DIFFUSIOND_CORE_ENGINE_LOAD_BOARD_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "core/loader/streaming_loader.h"
#include "core/util/cancellation.h"
#include "core/util/mutex.h"

namespace diffusiond {

// Thread-safe.
class LoadBoard {
 public:
  struct Watcher {
    std::function<void(const LoadProgress&)> on_progress;  // optional
    CancellationToken cancel;  // this caller giving up; default: never
  };

  // One key's load as its callers see it.
  class Load {
   public:
    // Called by the loader after each tensor: forwards `progress` to every
    // watcher, then cancels the load (CANCELLED) if every watcher has given
    // up.
    void publish(const LoadProgress& progress);
    // What the loader checks before each tensor.
    CancellationToken token() const { return cancel_.token(); }
    void cancel(absl::Status reason) { cancel_.cancel(std::move(reason)); }

   private:
    friend class LoadBoard;
    Mutex mu_;
    std::map<int, Watcher> watchers_ ABSL_GUARDED_BY(mu_);
    int next_id_ ABSL_GUARDED_BY(mu_) = 0;
    std::optional<LoadProgress> last_ ABSL_GUARDED_BY(mu_);
    CancellationSource cancel_;
  };

  // Membership of one caller; leaving (destruction) unregisters its watcher.
  class Ticket {
   public:
    Ticket(Ticket&&) = default;
    ~Ticket();
    Load& load() const { return *load_; }

   private:
    friend class LoadBoard;
    Ticket(LoadBoard* board, std::string key, std::shared_ptr<Load> load, int id)
        : board_(board), key_(std::move(key)), load_(std::move(load)), id_(id) {}
    LoadBoard* board_;
    std::string key_;
    std::shared_ptr<Load> load_;
    int id_;
  };

  // Joins the load of `key`, creating its record if nobody waits for it yet.
  // A late joiner first receives the latest progress.
  Ticket join(const std::string& key, Watcher watcher);

  // Cancels every load in progress and every load joined later, with
  // `reason`.
  void cancel_all(const absl::Status& reason);

 private:
  void leave(const std::string& key, const std::shared_ptr<Load>& load, int id);

  Mutex mu_;
  std::map<std::string, std::shared_ptr<Load>> loads_ ABSL_GUARDED_BY(mu_);
  absl::Status cancelled_all_ ABSL_GUARDED_BY(mu_);  // OK until cancel_all()
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_ENGINE_LOAD_BOARD_H_
