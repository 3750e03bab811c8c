// RPC metrics: a gRPC server interceptor that counts every call by service,
// method and status code, and observes its seconds from start to status
// (DaemonMetrics::observe_rpc). One interceptor covers every service, health
// and reflection included, so no handler has to remember to report.
//
// Not here: the families themselves (metrics.cc registers them).
#ifndef DIFFUSIOND_SERVER_RPC_METRICS_H_
#define DIFFUSIOND_SERVER_RPC_METRICS_H_

#include <grpcpp/support/server_interceptor.h>

#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "server/metrics.h"

namespace diffusiond {

struct RpcLabels {
  std::string service;  // "diffusiond.v1.ModelService"
  std::string method;   // "LoadModel"
};

// Splits a call's path ("/diffusiond.v1.ModelService/LoadModel"). A client
// may send any path, and each distinct one would be a new series: a path
// naming no method compiled into this binary (the generated descriptor
// pool) is {"unknown", "unknown"}, which keeps the label values bounded.
RpcLabels rpc_labels(absl::string_view path);

// Returns the interceptor factory for ServerBuilder::experimental()
// .SetInterceptorCreators. `metrics` must outlive the server. A call is
// observed when the server sends its status; one that ends without (the
// connection dropped first) is not.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> rpc_metrics_interceptor(DaemonMetrics* metrics);

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_RPC_METRICS_H_
