// One gRPC service over a fake engine, served on loopback with its own work
// queues and metrics, and a stub to call it: the services' unit tests.
#ifndef DIFFUSIOND_TESTS_TESTING_SERVICE_HARNESS_H_
#define DIFFUSIOND_TESTS_TESTING_SERVICE_HARNESS_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "core/util/work_queue.h"
#include "gtest/gtest.h"
#include "server/metrics.h"
#include "server/service_deps.h"

namespace diffusiond::testing {

template <typename Service, typename Api>
class ServiceHarness {
 public:
  // `events` and `catalog` (optional) serve WatchEvents and ListAvailable;
  // both must outlive the harness.
  explicit ServiceHarness(EngineApi* engine, EngineEventFeed* events = nullptr, ModelCatalog* catalog = nullptr)
      : metrics_(BuildInfo{}, nullptr),
        load_queue_(std::make_unique<WorkQueue>("load", 1, 4)),
        compute_queue_(std::make_unique<WorkQueue>("denoise", 1, 4)),
        admin_queue_(std::make_unique<WorkQueue>("unload", 1, 4)),
        service_(ServiceDeps{engine, load_queue_.get(), compute_queue_.get(), admin_queue_.get(), &metrics_, events,
                             catalog}) {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    EXPECT_NE(server_, nullptr);
    stub_ = Api::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  }
  // The server stops before the queues whose work it waits for.
  ~ServiceHarness() {
    server_->Shutdown();
    load_queue_.reset();
    compute_queue_.reset();
    admin_queue_.reset();
  }

  typename Api::Stub* stub() { return stub_.get(); }
  DaemonMetrics& metrics() { return metrics_; }

 private:
  DaemonMetrics metrics_;
  std::unique_ptr<WorkQueue> load_queue_, compute_queue_, admin_queue_;
  Service service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<typename Api::Stub> stub_;
};

}  // namespace diffusiond::testing

#endif  // DIFFUSIOND_TESTS_TESTING_SERVICE_HARNESS_H_
