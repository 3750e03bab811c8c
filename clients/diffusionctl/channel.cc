#include "clients/diffusionctl/channel.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <tuple>

#include "absl/strings/str_cat.h"
#include "core/util/file_text.h"

namespace diffusiond::ctl {

absl::StatusOr<std::shared_ptr<grpc::Channel>> open_channel(const GlobalOptions& options) {
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key go together");
  }
  if (!options.tls_cert.empty() && options.tls_ca.empty()) {
    return absl::InvalidArgumentError("--tls_cert needs --tls_ca: a client certificate is for TLS");
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!options.tls_ca.empty()) {
    absl::StatusOr<std::string> roots = read_text_file(options.tls_ca);
    if (!roots.ok()) {
      return absl::Status(roots.status().code(), absl::StrCat("--tls_ca ", options.tls_ca, ": ",
                                                              roots.status().message()));
    }
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = *roots;
    for (auto [flag, path, pem] : {std::tuple{"--tls_cert", &options.tls_cert, &ssl.pem_cert_chain},
                                   std::tuple{"--tls_key", &options.tls_key, &ssl.pem_private_key}}) {
      if (path->empty()) continue;
      absl::StatusOr<std::string> text = read_text_file(*path);
      if (!text.ok()) return absl::Status(text.status().code(), absl::StrCat(flag, " ", text.status().message()));
      *pem = *std::move(text);
    }
    credentials = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  return grpc::CreateCustomChannel(options.address, credentials, args);
}

}  // namespace diffusiond::ctl
