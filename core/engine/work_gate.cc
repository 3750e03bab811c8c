#include "core/engine/work_gate.h"

#include <utility>

#include "core/memory/allocator.h"

namespace diffusiond {

WorkGate::Job::Job(WorkGate* gate, const CancellationToken& caller)
    : gate_(gate), source_({gate->drain_.token(), caller}) {
  MutexLock lock(&gate_->mu_);
  if (!gate_->accepting_) {
    status_ = gate_->why_closed_;
    return;
  }
  ++gate_->running_;
}

WorkGate::Job::~Job() {
  if (!status_.ok()) return;
  release_free_heap_to_os();
  MutexLock lock(&gate_->mu_);
  if (--gate_->running_ == 0) gate_->idle_.signal_all();
}

WorkGate::WorkGate(Clock* clock, absl::Status why_closed) : clock_(clock), why_closed_(std::move(why_closed)) {}

void WorkGate::stop_accepting() {
  MutexLock lock(&mu_);
  accepting_ = false;
}

bool WorkGate::draining() const {
  MutexLock lock(&mu_);
  return !accepting_;
}

bool WorkGate::wait_idle(absl::Time deadline) {
  MutexLock lock(&mu_);
  while (running_ != 0) {
    if (clock_->wait_until(&idle_, &mu_, deadline) && running_ != 0) return false;
  }
  return true;
}

int WorkGate::running() const {
  MutexLock lock(&mu_);
  return running_;
}

void WorkGate::cancel_all() { drain_.cancel(why_closed_); }

}  // namespace diffusiond
