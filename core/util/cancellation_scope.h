// Stopping inside a forward. A forward runs for a whole denoising step or
// decode and has no Status-returning seam between its blocks, so the engine
// makes the work's token current on the calling thread for the duration of
// a model call (CancellationScope), and each forward calls check_cancelled()
// between its blocks. A cancelled token throws OperationCancelled, which
// status_of (exception_status.h) turns back into the token's reason — the
// forward's status_of is the one place it is caught.
//
// Not here: the token itself (cancellation.h).
#ifndef DIFFUSIOND_CORE_UTIL_CANCELLATION_SCOPE_H_
#define DIFFUSIOND_CORE_UTIL_CANCELLATION_SCOPE_H_

#include <cstdint>
#include <exception>

#include "absl/status/status.h"
#include "core/util/cancellation.h"

namespace diffusiond {

// Thrown by check_cancelled(); carries the token's reason (CANCELLED,
// UNAVAILABLE for a drain).
class OperationCancelled final : public std::exception {
 public:
  explicit OperationCancelled(absl::Status status) : status_(std::move(status)) {}
  const char* what() const noexcept override { return "operation cancelled"; }
  const absl::Status& status() const { return status_; }

 private:
  absl::Status status_;
};

// Makes `token` the calling thread's current token for this object's
// lifetime, then restores the previous one. Scopes nest; not copyable.
class CancellationScope {
 public:
  explicit CancellationScope(CancellationToken token);
  ~CancellationScope();
  CancellationScope(const CancellationScope&) = delete;
  CancellationScope& operator=(const CancellationScope&) = delete;

 private:
  CancellationToken token_;
  const CancellationToken* previous_;
};

// Throws OperationCancelled if the calling thread's current token is
// cancelled; does nothing outside any scope. Costs a thread-local read and
// an atomic load. REQUIRES: called inside status_of.
void check_cancelled();

// Returns how many times check_cancelled() has run in this process, on any
// thread: the number of forward blocks begun, which tests count to bound
// how far a forward runs past its cancellation.
int64_t cancellation_checks();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_UTIL_CANCELLATION_SCOPE_H_
