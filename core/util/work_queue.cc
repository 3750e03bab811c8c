#include "core/util/work_queue.h"

#include "absl/strings/str_cat.h"

namespace diffusiond {

WorkQueue::WorkQueue(std::string name, int threads, int capacity)
    : name_(std::move(name)), capacity_(capacity) {
  for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

WorkQueue::~WorkQueue() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  changed_.signal_all();
  for (std::thread& t : workers_) t.join();
}

absl::Status WorkQueue::submit(std::function<void()> task) {
  {
    MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError(absl::StrCat("the ", name_, " queue is shutting down"));
    const int idle = static_cast<int>(workers_.size()) - running_;
    if (static_cast<int>(tasks_.size()) >= capacity_ + std::max(0, idle)) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the ", name_, " queue is full (", running_, " running, ", tasks_.size(),
          " waiting); retry later"));
    }
    tasks_.push_back(std::move(task));
  }
  changed_.signal_all();
  return absl::OkStatus();
}

int WorkQueue::running() const {
  MutexLock lock(&mu_);
  return running_;
}

int WorkQueue::queued() const {
  MutexLock lock(&mu_);
  return static_cast<int>(tasks_.size());
}

void WorkQueue::work() {
  for (;;) {
    std::function<void()> task;
    {
      MutexLock lock(&mu_);
      while (tasks_.empty() && !stopping_) changed_.wait(&mu_);
      if (tasks_.empty()) return;  // stopping, and everything accepted is done
      task = std::move(tasks_.front());
      tasks_.pop_front();
      ++running_;
    }
    task();
    task = nullptr;  // captured state dies before the task counts as done
    MutexLock lock(&mu_);
    --running_;
  }
}

}  // namespace diffusiond
