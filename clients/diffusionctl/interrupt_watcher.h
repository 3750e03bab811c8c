// InterruptWatcher: turns Ctrl-C (SIGINT) and SIGTERM into a callback on a
// thread of its own, so the handler may take locks and call into gRPC,
// which a signal handler may not.
#ifndef DIFFUSIOND_CLIENTS_DIFFUSIONCTL_INTERRUPT_WATCHER_H_
#define DIFFUSIOND_CLIENTS_DIFFUSIONCTL_INTERRUPT_WATCHER_H_

#include <functional>
#include <thread>

namespace diffusiond::ctl {

// One per process; not thread-safe.
class InterruptWatcher {
 public:
  // Blocks SIGINT, SIGTERM and SIGUSR1 in the calling thread, and so in
  // every thread it starts later: construct it in main() before any other
  // thread (gRPC's included). The first SIGINT or SIGTERM calls
  // `on_interrupt`; a second exits the process at once with status 130.
  explicit InterruptWatcher(std::function<void()> on_interrupt);
  // Stops and joins the watching thread.
  ~InterruptWatcher();

  InterruptWatcher(const InterruptWatcher&) = delete;
  InterruptWatcher& operator=(const InterruptWatcher&) = delete;

 private:
  std::thread thread_;
};

}  // namespace diffusiond::ctl

#endif  // DIFFUSIOND_CLIENTS_DIFFUSIONCTL_INTERRUPT_WATCHER_H_
