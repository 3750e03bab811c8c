// The gRPC interceptor's labels, and a call through a real server counted by
// method and status code.
#include "server/rpc_metrics.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"

namespace diffusiond {
namespace {

using ::testing::HasSubstr;

TEST(RpcLabels, SplitsAKnownMethodsPath) {
  const RpcLabels labels = rpc_labels("/diffusiond.v1.ModelService/LoadModel");
  EXPECT_EQ(labels.service, "diffusiond.v1.ModelService");
  EXPECT_EQ(labels.method, "LoadModel");
  EXPECT_EQ(rpc_labels("/grpc.health.v1.Health/Check").method, "Check");
}

TEST(RpcLabels, AnyOtherPathIsUnknown) {
  for (const char* path :
       {"", "/", "LoadModel", "/diffusiond.v1.ModelService", "/diffusiond.v1.ModelService/",
        "/diffusiond.v1.ModelService/Nope", "/x.Y/LoadModel", "/diffusiond.v1/ModelService.LoadModel"}) {
    const RpcLabels labels = rpc_labels(path);
    EXPECT_EQ(labels.service, "unknown") << path;
    EXPECT_EQ(labels.method, "unknown") << path;
  }
}

TEST(RpcMetricsInterceptor, CountsCallsByMethodAndCode) {
  DaemonMetrics metrics(BuildInfo{}, nullptr);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(rpc_metrics_interceptor(&metrics));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  server->GetHealthCheckService()->SetServingStatus("", true);

  auto stub = grpc::health::v1::Health::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  for (const char* service : {"", "", "no-such-service"}) {
    grpc::ClientContext context;
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(service);
    grpc::health::v1::HealthCheckResponse response;
    (void)stub->Check(&context, request, &response);
  }
  server->Shutdown();

  const std::string text = metrics.scrape_text();
  EXPECT_THAT(text, HasSubstr("diffusiond_grpc_requests_total{code=\"OK\",method=\"Check\","
                              "service=\"grpc.health.v1.Health\"} 2"));
  EXPECT_THAT(text, HasSubstr("diffusiond_grpc_requests_total{code=\"NOT_FOUND\",method=\"Check\","
                              "service=\"grpc.health.v1.Health\"} 1"));
  EXPECT_THAT(text, HasSubstr("diffusiond_grpc_request_seconds_count{method=\"Check\","
                              "service=\"grpc.health.v1.Health\"} 3"));
}

}  // namespace
}  // namespace diffusiond
