// CancellableUnaryReactor: a unary call's reactor whose client giving up
// (a cancel, a passed deadline) fires a CancellationSource, so the engine
// call the handler queued stops or wakes at once instead of polling
// ServerContext::IsCancelled().
//
// Not here: streaming calls (event_stream.h has its own source).
#ifndef DIFFUSIOND_SERVER_CANCELLABLE_REACTOR_H_
#define DIFFUSIOND_SERVER_CANCELLABLE_REACTOR_H_

#include <grpcpp/grpcpp.h>

#include "core/util/cancellation.h"

namespace diffusiond {

// The reason a client's call was cancelled, as the work sees it.
inline constexpr const char* kClientGaveUp = "the client cancelled the call or its deadline passed";

// Owned by gRPC: it deletes itself when the call is done. Thread-safe.
class CancellableUnaryReactor final : public grpc::ServerUnaryReactor {
 public:
  // Fires (CANCELLED) when the client gives up; valid after the reactor is
  // gone.
  CancellationToken token() const { return cancel_.token(); }

  void OnCancel() override { cancel_.cancel(absl::CancelledError(kClientGaveUp)); }
  void OnDone() override { delete this; }

 private:
  CancellationSource cancel_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_CANCELLABLE_REACTOR_H_
