// WorkGate: the engine's door for work, and what a graceful shutdown needs
// of it. Each operation runs as a Job, which enters the gate when it is
// made: refused with UNAVAILABLE once the gate closes (stop_accepting),
// counted while it runs so that wait_idle() can wait for the drain, and
// holding a token that fires when its caller gives up (CANCELLED) or
// cancel_all() runs (UNAVAILABLE).
//
// When a job ends, after its reservations and temporaries are gone, the
// heap's free pages go back to the kernel, so that RSS returns to where it
// was before the call (core/memory/allocator.h).
#ifndef DIFFUSIOND_CORE_ENGINE_WORK_GATE_H_
#define DIFFUSIOND_CORE_ENGINE_WORK_GATE_H_

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/util/cancellation.h"
#include "core/util/clock.h"
#include "core/util/mutex.h"

namespace diffusiond {

// Thread-safe.
class WorkGate {
 public:
  // One unit of work. Not movable: it lives on the stack of the operation
  // it stands for.
  class Job {
   public:
    // Enters `gate`; status() says whether it was let in. `caller`: the
    // caller's token, if it may give up.
    explicit Job(WorkGate* gate, const CancellationToken& caller = {});
    Job(const Job&) = delete;
    Job& operator=(const Job&) = delete;
    ~Job();

    // OK when the gate let the job in; UNAVAILABLE once it had closed.
    const absl::Status& status() const { return status_; }
    bool cancelled() const { return source_.cancelled(); }
    // What the job's work checks, waits on and runs its forwards under.
    CancellationToken token() const { return source_.token(); }

   private:
    WorkGate* const gate_;
    // Linked to the gate's drain: work let in after cancel_all() is
    // stopped like the work before it.
    CancellationSource source_;
    absl::Status status_;
  };

  // `why_closed`: what a job refused after stop_accepting() is told, and the
  // reason cancel_all() gives.
  WorkGate(Clock* clock, absl::Status why_closed);

  // New jobs are refused from now on; those running go on.
  void stop_accepting();
  bool draining() const;
  // True once no job runs; false at `deadline` (on the gate's clock).
  bool wait_idle(absl::Time deadline);
  int running() const;
  // Fires every job's token, those to come included.
  void cancel_all();
  const absl::Status& why_closed() const { return why_closed_; }

 private:
  Clock* const clock_;
  const absl::Status why_closed_;
  CancellationSource drain_;
  mutable Mutex mu_;
  CondVar idle_;
  bool accepting_ ABSL_GUARDED_BY(mu_) = true;
  int running_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_ENGINE_WORK_GATE_H_
