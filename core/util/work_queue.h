// WorkQueue: a fixed set of worker threads behind a bounded queue. A full
// queue refuses new work at once (RESOURCE_EXHAUSTED) instead of letting
// requests pile up behind a slow model — the caller can retry elsewhere.
#ifndef DIFFUSIOND_CORE_UTIL_WORK_QUEUE_H_
#define DIFFUSIOND_CORE_UTIL_WORK_QUEUE_H_

#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "core/util/mutex.h"

namespace diffusiond {

// Thread-safe. Destruction finishes every task already accepted, then joins.
class WorkQueue {
 public:
  // `threads` workers; at most `capacity` tasks wait beyond those running.
  WorkQueue(std::string name, int threads, int capacity);
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `task`; RESOURCE_EXHAUSTED naming the queue when it is full.
  absl::Status submit(std::function<void()> task);

  int running() const;
  int queued() const;

 private:
  void work();

  const std::string name_;
  const int capacity_;
  mutable Mutex mu_;
  CondVar changed_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_UTIL_WORK_QUEUE_H_
