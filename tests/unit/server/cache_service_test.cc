// CacheService over a fake engine, through a real gRPC channel on loopback.
#include "server/cache_service.h"

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "diffusiond/v1/cache_service.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_engine.h"
#include "tests/testing/service_harness.h"

namespace diffusiond {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

CacheStats stats_with(std::vector<std::string> keys, int64_t hits) {
  CacheStats s;
  s.hits = hits;
  for (const std::string& k : keys) {
    CacheEntryStats e;
    e.key = k;
    s.entries.push_back(e);
  }
  return s;
}

class CacheServiceTest : public ::testing::Test {
 protected:
  testing::FakeEngine engine_;
  testing::ServiceHarness<CacheServiceImpl, v1::CacheService> harness_{&engine_};
};

TEST_F(CacheServiceTest, GetStatsReportsTheEnginesCountersAndModels) {
  engine_.stats_sequence = {stats_with({"a"}, 5)};
  ModelInfo a;
  a.model_id = "a";
  engine_.models = {a};
  grpc::ClientContext context;
  v1::GetStatsResponse response;
  ASSERT_TRUE(harness_.stub()->GetStats(&context, v1::GetStatsRequest(), &response).ok());
  EXPECT_EQ(response.hits(), 5);
  ASSERT_EQ(response.models_size(), 1);
  EXPECT_EQ(response.models(0).model_id(), "a");
  EXPECT_GT(response.process_resident_bytes(), 0);
}

TEST_F(CacheServiceTest, MakeRoomNamesWhatWasEvictedAndReleasesTheRoom) {
  // The engine's make_room says it evicted "a"; a stats snapshot that also
  // lost "c" (another call's eviction) must not be reported as this one's.
  engine_.stats_sequence = {stats_with({"a", "b", "c"}, 0), stats_with({"b"}, 0)};
  engine_.make_room_evicts = {"a"};
  grpc::ClientContext context;
  v1::MakeRoomRequest request;
  request.set_bytes(1000);
  v1::MakeRoomResponse response;
  ASSERT_TRUE(harness_.stub()->MakeRoom(&context, request, &response).ok());
  EXPECT_THAT(response.evicted_model_ids(), ElementsAre("a"));
  EXPECT_EQ(engine_.ram.snapshot().reserved_bytes, 0);  // the room is the caller's to use
}

TEST_F(CacheServiceTest, GetStatsReportsTheVramBudgetOfAnEngineWithADevice) {
  engine_.stats_sequence = {stats_with({"a"}, 0)};
  CacheStats vram;
  BudgetSnapshot empty_ram;  // the tier's inner RAM budget: not reported
  BudgetSnapshot cuda;
  cuda.device = Device::kCuda;
  cuda.capacity_bytes = 4000;
  cuda.reserved_bytes = 100;
  cuda.committed_bytes = 700;
  vram.budgets = {empty_ram, cuda};
  engine_.vram_sequence = {vram};
  grpc::ClientContext context;
  v1::GetStatsResponse response;
  ASSERT_TRUE(harness_.stub()->GetStats(&context, v1::GetStatsRequest(), &response).ok());
  ASSERT_EQ(response.budgets_size(), 1);
  EXPECT_EQ(response.budgets(0).device(), "cuda");
  EXPECT_EQ(response.budgets(0).capacity_bytes(), 4000);
  EXPECT_EQ(response.budgets(0).reserved_bytes(), 100);
  EXPECT_EQ(response.budgets(0).committed_bytes(), 700);
}

TEST_F(CacheServiceTest, MakeRoomOnCudaNamesThePlacementsEvicted) {
  // The RAM cache keeps both models; the VRAM tier loses "a"'s placement.
  engine_.stats_sequence = {stats_with({"a", "b"}, 0)};
  engine_.vram_sequence = {stats_with({"a", "b"}, 0), stats_with({"b"}, 0)};
  engine_.make_room_evicts = {"a"};
  grpc::ClientContext context;
  v1::MakeRoomRequest request;
  request.set_bytes(10);
  request.set_device("cuda");
  v1::MakeRoomResponse response;
  ASSERT_TRUE(harness_.stub()->MakeRoom(&context, request, &response).ok());
  EXPECT_THAT(response.evicted_model_ids(), ElementsAre("a"));
}

TEST_F(CacheServiceTest, MakeRoomRefusalsAndBadDevicesKeepTheirCodes) {
  grpc::ClientContext too_much;
  v1::MakeRoomRequest request;
  request.set_bytes(int64_t{1} << 30);
  v1::MakeRoomResponse response;
  EXPECT_EQ(harness_.stub()->MakeRoom(&too_much, request, &response).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  grpc::ClientContext bad_device;
  request.set_bytes(1);
  request.set_device("tpu");
  const grpc::Status status = harness_.stub()->MakeRoom(&bad_device, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("'tpu'"));
}

}  // namespace
}  // namespace diffusiond
