// The one place an absl::Status from core/ becomes a grpc::Status.
#ifndef DIFFUSIOND_SERVER_GRPC_STATUS_H_
#define DIFFUSIOND_SERVER_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace diffusiond {

// Maps the code one to one (the canonical codes are the same set) and keeps
// the message, which core/ writes for the person reading it.
grpc::Status to_grpc_status(const absl::Status& status);

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_GRPC_STATUS_H_
