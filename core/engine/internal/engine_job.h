// Engine::Job, shared by the engine's source files: one unit of work the
// lifecycle tracks, registered while it runs so that wait_idle() can wait
// for it, with a token that fires when its caller gives up (CANCELLED) or
// cancel_all() runs (UNAVAILABLE). When it ends, after its reservation and
// its temporaries are gone, the heap's free pages go back to the kernel:
// RSS returns to where it was before the call (core/memory/allocator.h).
#ifndef DIFFUSIOND_CORE_ENGINE_INTERNAL_ENGINE_JOB_H_
#define DIFFUSIOND_CORE_ENGINE_INTERNAL_ENGINE_JOB_H_

#include "core/engine/engine.h"
#include "core/memory/allocator.h"
#include "core/util/cancellation.h"

namespace diffusiond {

class Engine::Job {
 public:
  // `caller`: the caller's token, if it may give up.
  explicit Job(Engine* engine, const CancellationToken& caller = {})
      : engine_(engine), source_({engine->drain_.token(), caller}) {}
  ~Job() {
    if (!admitted_) return;
    release_free_heap_to_os();
    MutexLock lock(&engine_->mu_);
    engine_->jobs_.erase(this);
    if (engine_->jobs_.empty()) engine_->idle_.signal_all();
  }
  bool cancelled() const { return source_.cancelled(); }
  // What the job's work checks, waits on and runs its forwards under.
  CancellationToken token() const { return source_.token(); }

 private:
  friend class Engine;
  Engine* const engine_;
  bool admitted_ = false;
  CancellationSource source_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_ENGINE_INTERNAL_ENGINE_JOB_H_
