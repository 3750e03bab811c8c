#include "server/rpc_metrics.h"

#include <google/protobuf/descriptor.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace diffusiond {
namespace {

using grpc::experimental::InterceptionHookPoints;

class RpcMetricsInterceptor final : public grpc::experimental::Interceptor {
 public:
  RpcMetricsInterceptor(DaemonMetrics* metrics, RpcLabels labels)
      : metrics_(metrics), labels_(std::move(labels)), start_(absl::Now()) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      // gRPC's codes are absl's, number for number (grpc_status.h), and so
      // are their names.
      const auto code = static_cast<absl::StatusCode>(methods->GetSendStatus().error_code());
      metrics_->observe_rpc(labels_.service, labels_.method, absl::StatusCodeToString(code), absl::Now() - start_);
    }
    methods->Proceed();
  }

 private:
  DaemonMetrics* const metrics_;
  const RpcLabels labels_;
  const absl::Time start_;  // the interceptor is made as the call starts
};

class RpcMetricsFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit RpcMetricsFactory(DaemonMetrics* metrics) : metrics_(metrics) {}

  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override {
    return new RpcMetricsInterceptor(metrics_, rpc_labels(info->method() != nullptr ? info->method() : ""));
  }

 private:
  DaemonMetrics* const metrics_;
};

}  // namespace

RpcLabels rpc_labels(absl::string_view path) {
  RpcLabels unknown{"unknown", "unknown"};
  if (!absl::ConsumePrefix(&path, "/")) return unknown;
  const size_t slash = path.find('/');
  if (slash == absl::string_view::npos) return unknown;
  const absl::string_view service = path.substr(0, slash);
  const absl::string_view method = path.substr(slash + 1);
  const google::protobuf::MethodDescriptor* known =
      google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(absl::StrCat(service, ".", method));
  if (known == nullptr || known->service()->full_name() != service || known->name() != method) return unknown;
  return RpcLabels{std::string(service), std::string(method)};
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> rpc_metrics_interceptor(DaemonMetrics* metrics) {
  return std::make_unique<RpcMetricsFactory>(metrics);
}

}  // namespace diffusiond
