// The channel diffusionctl talks to the daemon over.
#ifndef DIFFUSIOND_CLIENTS_DIFFUSIONCTL_CHANNEL_H_
#define DIFFUSIOND_CLIENTS_DIFFUSIONCTL_CHANNEL_H_

#include <grpcpp/channel.h>

#include <memory>

#include "absl/status/statusor.h"
#include "clients/diffusionctl/command_line.h"

namespace diffusiond::ctl {

// Opens a channel to options.address: TLS trusting the PEM roots in
// options.tls_ca when set (presenting options.tls_cert/tls_key when set),
// plaintext otherwise. Responses of any size are
// accepted, since the daemon sets the limit on what it sends. Connects
// lazily, so an absent daemon shows up as UNAVAILABLE from the first call.
// NOT_FOUND or UNAVAILABLE naming the file when one cannot be read;
// INVALID_ARGUMENT for a certificate without its key or without tls_ca.
absl::StatusOr<std::shared_ptr<grpc::Channel>> open_channel(const GlobalOptions& options);

}  // namespace diffusiond::ctl

#endif  // DIFFUSIOND_CLIENTS_DIFFUSIONCTL_CHANNEL_H_
