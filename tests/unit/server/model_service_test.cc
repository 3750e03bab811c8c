// ModelService over a fake engine, through a real gRPC channel on loopback:
// what the service itself decides (hits on gRPC's thread, loads on the
// queue with progress, validation before the engine, status mapping).
#include "server/model_service.h"

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_engine.h"
#include "tests/testing/service_harness.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

using ::testing::HasSubstr;

ModelInfo info(const std::string& id) {
  ModelInfo m;
  m.model_id = id;
  m.architecture = "z-image";
  m.compute_dtype = ComputeDtype::kBFloat16;
  m.tensors = 131;
  return m;
}

class ModelServiceTest : public ::testing::Test {
 protected:
  // Runs LoadModel to its end; returns its status and fills `events`.
  grpc::Status load(const v1::LoadModelRequest& request, std::vector<v1::LoadModelEvent>* events) {
    grpc::ClientContext context;
    std::unique_ptr<grpc::ClientReader<v1::LoadModelEvent>> reader = stub_->LoadModel(&context, request);
    v1::LoadModelEvent event;
    while (reader->Read(&event)) events->push_back(event);
    return reader->Finish();
  }

  testing::FakeEngine engine_;
  testing::ServiceHarness<ModelServiceImpl, v1::ModelService> harness_{&engine_};
  v1::ModelService::Stub* const stub_ = harness_.stub();
};

TEST_F(ModelServiceTest, ACachedModelAnswersWithoutALoad) {
  engine_.find_result = info("m");
  v1::LoadModelRequest request;
  request.set_path("demo");
  request.set_model_id("m");
  std::vector<v1::LoadModelEvent> events;
  ASSERT_TRUE(load(request, &events).ok());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].loaded().model_id(), "m");
  EXPECT_EQ(events[0].loaded().compute_dtype(), "bfloat16");
  EXPECT_EQ(engine_.finds.load(), 1);
  EXPECT_EQ(engine_.loads.load(), 0);
  EXPECT_EQ(engine_.last_path, "demo");
}

TEST_F(ModelServiceTest, AMissLoadsOnTheQueueAndStreamsProgressThenTheModel) {
  // The last event a switch's load reports: what it wrote over.
  engine_.load_progress = {LoadProgress{0, 100, 0, 4, {}}, LoadProgress{100, 100, 4, 4, {}, 60}};
  engine_.load_result = info("demo");
  v1::LoadModelRequest request;
  request.set_path("demo");
  std::vector<v1::LoadModelEvent> events;
  ASSERT_TRUE(load(request, &events).ok());
  ASSERT_GE(events.size(), 2u);  // progress events may be coalesced, never the last
  EXPECT_TRUE(events.front().has_progress());
  const v1::LoadProgress& last = events[events.size() - 2].progress();
  EXPECT_EQ(last.bytes_read(), 100);
  EXPECT_EQ(last.reused_bytes(), 60);
  EXPECT_EQ(events.back().loaded().model_id(), "demo");
  EXPECT_EQ(engine_.loads.load(), 1);
}

TEST_F(ModelServiceTest, EngineErrorsKeepTheirCodeAndMessage) {
  engine_.load_result = absl::ResourceExhaustedError("cannot make room on cpu: needed 2 GiB");
  v1::LoadModelRequest request;
  request.set_path("big");
  std::vector<v1::LoadModelEvent> events;
  const grpc::Status status = load(request, &events);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(status.error_message(), HasSubstr("needed 2 GiB"));
  EXPECT_TRUE(events.empty());
}

TEST_F(ModelServiceTest, BadOptionsAreRefusedBeforeTheEngineIsAsked) {
  v1::LoadModelRequest request;
  request.set_path("demo");
  request.set_compute_dtype("float8");
  std::vector<v1::LoadModelEvent> events;
  const grpc::Status status = load(request, &events);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("float32, bfloat16, float16"));
  EXPECT_EQ(engine_.finds.load() + engine_.loads.load(), 0);
}

TEST_F(ModelServiceTest, UnloadReportsTheBytesFreed) {
  UnloadResult freed;
  freed.freed_bytes[kCpuIndex] = 12345;
  engine_.unload_result = freed;
  grpc::ClientContext context;
  v1::UnloadModelRequest request;
  request.set_model_id("m");
  v1::UnloadModelResponse response;
  ASSERT_TRUE(stub_->UnloadModel(&context, request, &response).ok());
  EXPECT_EQ(response.ram_bytes_freed(), 12345);
  EXPECT_EQ(engine_.last_model_id, "m");
}

TEST_F(ModelServiceTest, ListModelsIsTheEnginesList) {
  engine_.models = {info("a"), info("b")};
  grpc::ClientContext context;
  v1::ListModelsResponse response;
  ASSERT_TRUE(stub_->ListModels(&context, v1::ListModelsRequest(), &response).ok());
  ASSERT_EQ(response.models_size(), 2);
  EXPECT_EQ(response.models(1).model_id(), "b");
  EXPECT_EQ(response.models(1).tensors(), 131);
}

TEST_F(ModelServiceTest, ALeaseWithoutAPositiveTtlIsRefusedBeforeTheEngine) {
  engine_.lease_result = LeaseId{7};
  grpc::ClientContext context;
  v1::AcquireLeaseRequest request;
  request.set_model_id("m");
  request.set_ttl_seconds(0);
  v1::AcquireLeaseResponse response;
  const grpc::Status status = stub_->AcquireLease(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(engine_.last_model_id.empty());

  grpc::ClientContext again;
  request.set_ttl_seconds(30);
  ASSERT_TRUE(stub_->AcquireLease(&again, request, &response).ok());
  EXPECT_EQ(response.lease_id(), 7u);
}

}  // namespace
}  // namespace diffusiond

namespace diffusiond {
namespace {

TEST(ModelServiceListAvailable, ListsTheCatalogOnTheUnloadQueue) {
  testing::TempDir dir;
  dir.write("models/broken.safetensors", "not a safetensors file");
  dir.write("models/notes.txt", "not a checkpoint");
  CatalogOptions options;
  options.models_dir = dir.path("models");
  options.compute_dtype = ComputeDtype::kBFloat16;
  ModelCatalog catalog(options);
  testing::FakeEngine engine;
  testing::ServiceHarness<ModelServiceImpl, v1::ModelService> harness(&engine, nullptr, &catalog);
  grpc::ClientContext context;
  v1::ListAvailableResponse response;
  ASSERT_TRUE(harness.stub()->ListAvailable(&context, v1::ListAvailableRequest(), &response).ok());
  ASSERT_EQ(response.models_size(), 1);
  EXPECT_EQ(response.models(0).path(), "broken.safetensors");
  EXPECT_EQ(response.models(0).format(), "safetensors");
  EXPECT_EQ(response.models(0).compute_dtype(), "bfloat16");
  EXPECT_FALSE(response.models(0).error().empty());
  EXPECT_FALSE(response.truncated());
  EXPECT_EQ(response.entries_scanned(), 2);
}

TEST(ModelServiceListAvailable, WithoutACatalogItIsUnimplemented) {
  testing::FakeEngine engine;
  testing::ServiceHarness<ModelServiceImpl, v1::ModelService> harness(&engine);
  grpc::ClientContext context;
  v1::ListAvailableResponse response;
  EXPECT_EQ(harness.stub()->ListAvailable(&context, v1::ListAvailableRequest(), &response).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
}

}  // namespace
}  // namespace diffusiond
