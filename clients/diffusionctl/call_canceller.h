// CallCanceller: how Ctrl-C reaches the call a command is making. The
// signal-watching thread calls cancel(); the command registers its
// ClientContext for the length of the call.
#ifndef DIFFUSIOND_CLIENTS_DIFFUSIONCTL_CALL_CANCELLER_H_
#define DIFFUSIOND_CLIENTS_DIFFUSIONCTL_CALL_CANCELLER_H_

#include <grpcpp/client_context.h>

#include "absl/base/thread_annotations.h"
#include "core/util/mutex.h"

namespace diffusiond::ctl {

// Thread-safe.
class CallCanceller {
 public:
  // Cancels the registered call, and every call registered afterwards.
  // Idempotent.
  void cancel();
  bool cancelled() const;

  // While alive, cancel() cancels `context`; when cancel() came first, the
  // call is cancelled as soon as it starts. `canceller` may be null (no
  // cancellation); neither pointer is owned, and both must outlive the Scope.
  class Scope {
   public:
    Scope(CallCanceller* canceller, grpc::ClientContext* context);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    CallCanceller* const canceller_;
  };

 private:
  mutable Mutex mu_;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace diffusiond::ctl

#endif  // DIFFUSIOND_CLIENTS_DIFFUSIONCTL_CALL_CANCELLER_H_
