// The credentials the gRPC port is served with: plaintext, or TLS
// (--tls_cert/--tls_key) that with --tls_client_ca also verifies the client
// certificates presented; and, with an Authorizer (--auth_token_file),
// every call checked before it reaches a service. Refusals are UNAUTHENTICATED
// or PERMISSION_DENIED, counted in diffusiond_auth_denied_total by reason and
// logged at debug level without the credential.
//
// The check is gRPC's auth metadata processor, run for each call ahead of
// every handler (health and reflection included), on plaintext ports as on
// TLS ones. A refused call reaches no service and no interceptor, so
// diffusiond_grpc_requests_total does not count it.
//
// Not here: what is allowed (authorizer.h).
#ifndef DIFFUSIOND_SERVER_SERVER_CREDENTIALS_H_
#define DIFFUSIOND_SERVER_SERVER_CREDENTIALS_H_

#include <grpcpp/security/server_credentials.h>

#include <memory>

#include "absl/status/statusor.h"
#include "server/authorizer.h"
#include "server/daemon_options.h"
#include "server/log.h"
#include "server/metrics.h"

namespace diffusiond {

// Reads the PEM files the options name. NOT_FOUND / FAILED_PRECONDITION
// naming the flag and file when one cannot be read. `authorizer` may be
// null (every call allowed); it, `metrics` and `log` must outlive the server.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> server_credentials(const DaemonOptions& options,
                                                                            const Authorizer* authorizer,
                                                                            DaemonMetrics* metrics, const Log& log);

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_SERVER_CREDENTIALS_H_
