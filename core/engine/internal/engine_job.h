// Engine::Job, shared by the engine's source files: one unit of work the
// lifecycle tracks, registered while it runs so that wait_idle() can wait
// for it and cancel_all() can stop it.
#ifndef DIFFUSIOND_CORE_ENGINE_INTERNAL_ENGINE_JOB_H_
#define DIFFUSIOND_CORE_ENGINE_INTERNAL_ENGINE_JOB_H_

#include <atomic>

#include "core/engine/engine.h"

namespace diffusiond {

class Engine::Job {
 public:
  explicit Job(Engine* engine) : engine_(engine) {}
  ~Job() {
    if (!admitted_) return;
    MutexLock lock(&engine_->mu_);
    engine_->jobs_.erase(this);
    if (engine_->jobs_.empty()) engine_->idle_.signal_all();
  }
  bool cancelled() const { return cancelled_.load(); }

 private:
  friend class Engine;
  Engine* const engine_;
  bool admitted_ = false;
  std::atomic<bool> cancelled_{false};
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_ENGINE_INTERNAL_ENGINE_JOB_H_
