#include "clients/diffusionctl/commands.h"

#include <variant>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace diffusiond::ctl {

absl::Status run_command(const CommandEnv& env, const CommandOptions& options) {
  return std::visit([&env](const auto& o) { return run_command(env, o); }, options);
}

namespace internal {
namespace {

// Header values must be printable ASCII: the id is percent-encoded as a URL
// path would be, exactly as the Python client does (clients/python,
// _transport.metadata), so both send one model to one replica.
std::string routing_value(absl::string_view model) {
  static constexpr absl::string_view kSafe = "/:@+-._~=,";
  std::string out;
  for (const unsigned char c : model) {
    if (absl::ascii_isalnum(c) || kSafe.find(static_cast<char>(c)) != absl::string_view::npos) {
      out.push_back(static_cast<char>(c));
    } else {
      absl::StrAppendFormat(&out, "%%%02X", c);
    }
  }
  return out;
}

}  // namespace

std::unique_ptr<grpc::ClientContext> new_context(const CommandEnv& env, absl::string_view model) {
  auto context = std::make_unique<grpc::ClientContext>();
  if (env.timeout.has_value()) {
    context->set_deadline(absl::ToChronoTime(absl::Now() + *env.timeout));
  }
  if (!env.token.empty()) context->AddMetadata("authorization", absl::StrCat("Bearer ", env.token));
  if (!model.empty()) context->AddMetadata(kRoutingHeader, routing_value(model));
  return context;
}

absl::Status from_grpc(const CommandEnv& env, const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  const auto code = static_cast<absl::StatusCode>(status.error_code());
  std::string message = status.error_message();
  if (code == absl::StatusCode::kUnavailable) {
    message = absl::StrCat(env.address, ": ", message);
  } else if (code == absl::StatusCode::kDeadlineExceeded && env.timeout.has_value()) {
    message = absl::StrCat(message, " (--timeout ", absl::FormatDuration(*env.timeout), ")");
  } else if (code == absl::StatusCode::kCancelled && env.canceller != nullptr &&
             env.canceller->cancelled()) {
    message = "cancelled by Ctrl-C";
  }
  return absl::Status(code, message);
}

}  // namespace internal
}  // namespace diffusiond::ctl
