// Mutex, MutexLock and CondVar: std::mutex with Clang thread-safety
// annotations, after leveldb's port::Mutex.
//
// Why not absl::Mutex: Debian's libabsl is built without TSan annotations,
// so TSan cannot see its happens-before edges and reports races on data
// that is correctly locked. std::mutex goes through pthread, which TSan
// intercepts. Use these types for every lock in core/.
#ifndef DIFFUSIOND_CORE_UTIL_MUTEX_H_
#define DIFFUSIOND_CORE_UTIL_MUTEX_H_

#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"

namespace diffusiond {

class CondVar;

// A non-reentrant exclusive lock. Thread-safe, of course.
class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  // Tells the analysis the caller holds the lock; checks nothing at run time.
  void assert_held() ABSL_ASSERT_EXCLUSIVE_LOCK() {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` for its scope.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// A condition variable. Each wait names the Mutex it releases, so the
// thread-safety analysis can check the caller holds it.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // Releases `mu`, waits for a signal (or a spurious wake), retakes `mu`.
  void wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // As wait(), but returns true if `deadline` passed before a wake.
  bool wait_until(Mutex* mu, absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (deadline == absl::InfiniteFuture()) {
      wait(mu);
      return false;
    }
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool timed_out =
        cv_.wait_until(lock, absl::ToChronoTime(deadline)) == std::cv_status::timeout;
    lock.release();
    return timed_out;
  }
  void signal_all() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_UTIL_MUTEX_H_
