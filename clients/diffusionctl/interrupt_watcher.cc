#include "clients/diffusionctl/interrupt_watcher.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cassert>

namespace diffusiond::ctl {
namespace {

// SIGUSR1 is how the destructor wakes the thread to stop.
sigset_t watched_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);
  return set;
}

}  // namespace

InterruptWatcher::InterruptWatcher(std::function<void()> on_interrupt) {
  const sigset_t set = watched_signals();
  const int rc = pthread_sigmask(SIG_BLOCK, &set, nullptr);
  assert(rc == 0);
  (void)rc;
  thread_ = std::thread([set, on_interrupt = std::move(on_interrupt)] {
    int interrupts = 0;
    for (;;) {
      int signal = 0;
      if (sigwait(&set, &signal) != 0 || signal == SIGUSR1) return;
      if (++interrupts > 1) _exit(130);
      on_interrupt();
    }
  });
}

InterruptWatcher::~InterruptWatcher() {
  pthread_kill(thread_.native_handle(), SIGUSR1);
  thread_.join();
}

}  // namespace diffusiond::ctl
