// DenoiseService's Step over a fake engine, through a real gRPC channel on
// loopback: wire tensors checked before the engine is asked, outputs
// converted back, engine errors kept.
#include "server/denoise_service.h"

#include <grpcpp/grpcpp.h>
#include <torch/types.h>

#include <cstring>
#include <string>

#include "diffusiond/v1/denoise_service.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_engine.h"
#include "tests/testing/service_harness.h"

namespace diffusiond {
namespace {

using ::testing::HasSubstr;

v1::StepRequest step_request(const std::string& data) {
  v1::StepRequest request;
  request.set_model_id("m");
  v1::NamedTensor* x = request.add_inputs();
  x->set_name("x");
  x->mutable_tensor()->set_dtype(v1::DTYPE_FLOAT32);
  x->mutable_tensor()->add_shape(2);
  x->mutable_tensor()->set_data(data);
  return request;
}

class DenoiseServiceTest : public ::testing::Test {
 protected:
  testing::FakeEngine engine_;
  testing::ServiceHarness<DenoiseServiceImpl, v1::DenoiseService> harness_{&engine_};
};

TEST_F(DenoiseServiceTest, StepConvertsInputsAndOutputs) {
  engine_.step_result = NamedTensors{{"out", torch::full({3}, 2.5f)}};
  const float in[2] = {1.0f, -1.0f};
  grpc::ClientContext context;
  v1::StepResponse response;
  ASSERT_TRUE(harness_.stub()
                  ->Step(&context, step_request(std::string(reinterpret_cast<const char*>(in), sizeof(in))),
                         &response)
                  .ok());
  EXPECT_EQ(engine_.last_model_id, "m");
  EXPECT_TRUE(engine_.step_adapters.empty());
  ASSERT_EQ(engine_.step_inputs.count("x"), 1u);
  EXPECT_EQ(engine_.step_inputs.at("x")[1].item<float>(), -1.0f);
  ASSERT_EQ(response.outputs_size(), 1);
  EXPECT_EQ(response.outputs(0).name(), "out");
  const v1::Tensor& out = response.outputs(0).tensor();
  EXPECT_EQ(out.dtype(), v1::DTYPE_FLOAT32);
  ASSERT_EQ(out.data().size(), 3 * sizeof(float));
  float first = 0;
  std::memcpy(&first, out.data().data(), sizeof(first));
  EXPECT_EQ(first, 2.5f);
}

TEST_F(DenoiseServiceTest, AMalformedTensorIsRefusedBeforeTheEngine) {
  grpc::ClientContext context;
  v1::StepResponse response;
  const grpc::Status status = harness_.stub()->Step(&context, step_request("12345"), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("x"));
  EXPECT_TRUE(engine_.last_model_id.empty());
}

TEST_F(DenoiseServiceTest, EngineErrorsKeepTheirCode) {
  engine_.step_result = absl::NotFoundError("model \"m\" is not loaded; load it first");
  const float in[2] = {0, 0};
  grpc::ClientContext context;
  v1::StepResponse response;
  const grpc::Status status = harness_.stub()->Step(
      &context, step_request(std::string(reinterpret_cast<const char*>(in), sizeof(in))), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("load it first"));
}

// A Step's adapters reach the engine with their weights.
TEST_F(DenoiseServiceTest, StepPassesItsAdapters) {
  engine_.step_result = NamedTensors{{"out", torch::full({1}, 1.0f)}};
  const float in[2] = {1.0f, 2.0f};
  v1::StepRequest request = step_request(std::string(reinterpret_cast<const char*>(in), sizeof(in)));
  v1::Adapter* a = request.add_adapters();
  a->set_path("style.safetensors");
  a->set_weight(0.5);
  grpc::ClientContext context;
  v1::StepResponse response;
  ASSERT_TRUE(harness_.stub()->Step(&context, request, &response).ok());
  ASSERT_EQ(engine_.step_adapters.size(), 1u);
  EXPECT_EQ(engine_.step_adapters[0].path, "style.safetensors");
  EXPECT_EQ(engine_.step_adapters[0].weight, 0.5);
}

}  // namespace
}  // namespace diffusiond
