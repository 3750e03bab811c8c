#include "server/server_credentials.h"

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/util/file_text.h"

namespace diffusiond {
namespace {

// What the processor needs; owned by the core credentials (freed by their
// destroy callback).
struct CallChecker {
  const Authorizer* authorizer;
  DaemonMetrics* metrics;
  const Log* log;
};

absl::string_view slice_view(const grpc_slice& s) {
  return absl::string_view(reinterpret_cast<const char*>(GRPC_SLICE_START_PTR(s)), GRPC_SLICE_LENGTH(s));
}

// The first value of the auth context's property `name`; empty if none.
absl::string_view auth_property(const grpc_auth_context* context, const char* name) {
  if (context == nullptr) return {};
  grpc_auth_property_iterator it = grpc_auth_context_find_properties_by_name(context, name);
  const grpc_auth_property* p = grpc_auth_property_iterator_next(&it);
  return p == nullptr ? absl::string_view() : absl::string_view(p->value, p->value_length);
}

// Runs on gRPC's thread for each call, before any handler, and answers at
// once: the check is a lookup in memory.
void check_call(void* state, grpc_auth_context* context, const grpc_metadata* md, size_t num_md,
                grpc_process_auth_metadata_done_cb done, void* user_data) {
  const auto* checker = static_cast<const CallChecker*>(state);
  absl::string_view path;
  CallerCredentials caller;
  const grpc_metadata* authorization = nullptr;
  for (size_t i = 0; i < num_md; ++i) {
    const absl::string_view key = slice_view(md[i].key);
    if (key == ":path") {
      path = slice_view(md[i].value);
    } else if (key == "authorization" && authorization == nullptr) {
      authorization = &md[i];
      caller.has_authorization = true;
      caller.authorization = slice_view(md[i].value);
    }
  }
  // Present only when the handshake verified a client certificate against
  // --tls_client_ca.
  caller.subject = auth_property(context, GRPC_X509_SUBJECT_PROPERTY_NAME);
  caller.common_name = auth_property(context, GRPC_X509_CN_PROPERTY_NAME);
  const AuthDecision decision = checker->authorizer->check(path, caller);
  if (decision.code == absl::StatusCode::kOk) {
    // The token goes no further than here: no handler sees it.
    done(user_data, authorization, authorization != nullptr ? 1 : 0, nullptr, 0, GRPC_STATUS_OK, nullptr);
    return;
  }
  checker->metrics->count_auth_denial(decision.reason);
  if (checker->log->enabled(LogLevel::kDebug)) {
    checker->log->write(LogLevel::kDebug, "call refused",
                        absl::StrCat("method=", logfmt_value(path), " code=", absl::StatusCodeToString(decision.code),
                                     " reason=", decision.reason));
  }
  // gRPC's codes are absl's, number for number (grpc_status.h).
  done(user_data, nullptr, 0, nullptr, 0, static_cast<grpc_status_code>(decision.code), decision.message.c_str());
}

void destroy_checker(void* state) { delete static_cast<CallChecker*>(state); }

// grpc::ServerCredentials over core credentials, which (unlike the C++
// InsecureServerCredentials) take an auth metadata processor on a
// plaintext port too. The base class initialises gRPC before the core
// credentials are made.
class CoreServerCredentials final : public grpc::ServerCredentials {
 public:
  CoreServerCredentials(const std::string& cert, const std::string& key, const std::string& client_ca) {
    if (cert.empty()) {
      creds_ = grpc_insecure_server_credentials_create();
    } else {
      // Copied by gRPC. A client certificate is asked for and, if sent,
      // must chain to client_ca, or the handshake fails; a client without
      // one may still present a token.
      grpc_ssl_pem_key_cert_pair pair{key.c_str(), cert.c_str()};
      creds_ = grpc_ssl_server_credentials_create_ex(
          client_ca.empty() ? nullptr : client_ca.c_str(), &pair, 1,
          client_ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY,
          nullptr);
    }
  }
  ~CoreServerCredentials() override { grpc_server_credentials_release(creds_); }

  void SetAuthMetadataProcessor(const std::shared_ptr<grpc::AuthMetadataProcessor>&) override {
    // Not used: the daemon sets its processor on the core credentials.
    abort();
  }
  void set_checker(const CallChecker& checker) {
    grpc_server_credentials_set_auth_metadata_processor(
        creds_, grpc_auth_metadata_processor{check_call, destroy_checker, new CallChecker(checker)});
  }

 private:
  int AddPortToServer(const std::string& addr, grpc_server* server) override {
    return grpc_server_add_http2_port(server, addr.c_str(), creds_);
  }

  grpc_server_credentials* creds_ = nullptr;
};

absl::StatusOr<std::string> read_flag_file(absl::string_view flag, const std::string& path) {
  if (path.empty()) return std::string();
  absl::StatusOr<std::string> text = read_text_file(path);
  if (!text.ok()) return absl::Status(text.status().code(), absl::StrCat("--", flag, " ", text.status().message()));
  return text;
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> server_credentials(const DaemonOptions& options,
                                                                            const Authorizer* authorizer,
                                                                            DaemonMetrics* metrics, const Log& log) {
  absl::StatusOr<std::string> cert = read_flag_file("tls_cert", options.tls_cert);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = read_flag_file("tls_key", options.tls_key);
  if (!key.ok()) return key.status();
  absl::StatusOr<std::string> client_ca = read_flag_file("tls_client_ca", options.tls_client_ca);
  if (!client_ca.ok()) return client_ca.status();
  auto creds = std::make_shared<CoreServerCredentials>(*cert, *key, *client_ca);
  if (authorizer != nullptr) creds->set_checker(CallChecker{authorizer, metrics, &log});
  return creds;
}

}  // namespace diffusiond
