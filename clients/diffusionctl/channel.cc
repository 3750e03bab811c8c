#include "clients/diffusionctl/channel.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include "absl/strings/str_cat.h"
#include "core/util/file_text.h"

namespace diffusiond::ctl {

absl::StatusOr<std::shared_ptr<grpc::Channel>> open_channel(const GlobalOptions& options) {
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!options.tls_ca.empty()) {
    absl::StatusOr<std::string> roots = read_text_file(options.tls_ca);
    if (!roots.ok()) {
      return absl::Status(roots.status().code(), absl::StrCat("--tls_ca ", options.tls_ca, ": ",
                                                              roots.status().message()));
    }
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = *roots;
    credentials = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  return grpc::CreateCustomChannel(options.address, credentials, args);
}

}  // namespace diffusiond::ctl
