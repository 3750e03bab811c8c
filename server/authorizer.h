// Authorizer: decides whether a call may proceed, from the method's rule
// (method_roles.h) and the caller's credentials — a bearer token or a
// verified client certificate — looked up in the access table
// (access_table.h), which it reads from --auth_token_file and re-reads when
// the file changes.
//
// Not here: gRPC (server_credentials.cc turns a call into a check and a
// decision into a status), metrics and logs (the caller's).
#ifndef DIFFUSIOND_SERVER_AUTHORIZER_H_
#define DIFFUSIOND_SERVER_AUTHORIZER_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/util/mutex.h"
#include "server/access_table.h"

namespace diffusiond {

// What a call presents. Views into the call's metadata and auth context,
// valid during the check only.
struct CallerCredentials {
  bool has_authorization = false;   // the call sent `authorization` metadata
  absl::string_view authorization;  // its value ("Bearer TOKEN")
  // A client certificate the TLS handshake verified; both empty without one.
  absl::string_view subject;      // RFC 2253, "CN=backend,O=example"
  absl::string_view common_name;  // "backend"
};

// The reasons a call is refused: the label values of
// diffusiond_auth_denied_total, a fixed set.
inline constexpr const char* kAuthDenialReasons[] = {
    "missing_credentials",  // UNAUTHENTICATED: no token, no client certificate
    "malformed_header",     // UNAUTHENTICATED: `authorization` is not "Bearer TOKEN"
    "unknown_token",        // UNAUTHENTICATED: a token not in the table
    "unknown_certificate",  // UNAUTHENTICATED: a verified certificate not in the table
    "role",                 // PERMISSION_DENIED: the caller's role is below the method's
    "unmapped_method",      // PERMISSION_DENIED: the method has no rule (fail closed)
};

struct AuthDecision {
  absl::StatusCode code = absl::StatusCode::kOk;  // or kUnauthenticated, kPermissionDenied
  absl::string_view reason;                       // one of kAuthDenialReasons; empty when allowed
  std::string message;                            // for the caller; never holds a token
};

// Decides `method_path` ("/package.Service/Method") for `caller` against
// `table`. Open methods are allowed without looking at credentials. A
// bearer token, when sent, decides alone (a bad one is refused even with a
// good certificate); otherwise the certificate does.
AuthDecision authorize(const AccessTable& table, absl::string_view method_path, const CallerCredentials& caller);

// Thread-safe: check() runs on gRPC's threads while reload_if_changed()
// runs on another.
class Authorizer {
 public:
  // Reads and parses `path`. NOT_FOUND or FAILED_PRECONDITION naming it when
  // it cannot be read; INVALID_ARGUMENT "<path>: line N: ..." when malformed.
  static absl::StatusOr<std::unique_ptr<Authorizer>> create(std::string path);

  // authorize() against the current table.
  AuthDecision check(absl::string_view method_path, const CallerCredentials& caller) const;

  enum class ReloadOutcome { kUnchanged, kReloaded, kFailed };
  struct Reload {
    ReloadOutcome outcome = ReloadOutcome::kUnchanged;
    absl::Status error;  // with kFailed; the previous table stays in force
  };
  // Re-reads the file when what `path` names changed: another file (a
  // Kubernetes Secret update swaps a symlink), another size or mtime. A
  // file that cannot be read or parsed leaves the table as it was; one
  // failure is reported once (kFailed), then kUnchanged until it differs.
  Reload reload_if_changed();

  // The table in force.
  std::shared_ptr<const AccessTable> table() const;
  const std::string& path() const { return path_; }

 private:
  // What stat() says of the file; a change means it must be read again.
  struct FileIdentity {
    dev_t device = 0;
    ino_t inode = 0;
    off_t size = 0;
    int64_t mtime_ns = 0;
    bool operator==(const FileIdentity& o) const {
      return device == o.device && inode == o.inode && size == o.size && mtime_ns == o.mtime_ns;
    }
  };
  static absl::StatusOr<FileIdentity> identify(const std::string& path);

  explicit Authorizer(std::string path) : path_(std::move(path)) {}

  const std::string path_;
  mutable Mutex mu_;
  std::shared_ptr<const AccessTable> table_ ABSL_GUARDED_BY(mu_);
  // Touched by reload_if_changed() alone (one caller at a time).
  FileIdentity identity_;
  std::string text_;          // the file as last read
  std::string last_failure_;  // the last failure reported; empty after a success
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_AUTHORIZER_H_
