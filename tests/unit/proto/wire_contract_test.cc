// The diffusiond.v1 contract compiles to messages and service stubs with
// the shapes the daemon and its clients rely on.
#include "diffusiond/v1/cache_service.grpc.pb.h"
#include "diffusiond/v1/denoise_service.grpc.pb.h"
#include "diffusiond/v1/model_service.grpc.pb.h"
#include "gtest/gtest.h"

namespace diffusiond {
namespace {

TEST(WireContract, DenoiseRequestRoundTrips) {
  v1::DenoiseRequest request;
  request.set_model_id("z");
  request.set_guidance_scale(5.0);
  request.set_steps(8);
  request.add_latent_shape(16);
  v1::NamedTensor* named = request.mutable_conditioning()->add_tensors();
  named->set_name("cap_feats");
  (*request.mutable_conditioning()->mutable_scalars())["guidance"] = 3.5;
  v1::Tensor* caption = named->mutable_tensor();
  caption->set_dtype(v1::DTYPE_FLOAT32);
  caption->add_shape(1);
  caption->set_data(std::string(4, '\0'));
  const std::string wire = request.SerializeAsString();
  v1::DenoiseRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(wire));
  EXPECT_EQ(parsed.model_id(), "z");
  EXPECT_EQ(parsed.conditioning().tensors(0).tensor().data().size(), 4u);
  EXPECT_EQ(parsed.conditioning().scalars().at("guidance"), 3.5);
  EXPECT_EQ(parsed.guidance_scale(), 5.0);
}

TEST(WireContract, LoadEventsAreProgressThenInfo) {
  v1::LoadModelEvent event;
  event.mutable_progress()->set_tensors_done(3);
  EXPECT_EQ(event.event_case(), v1::LoadModelEvent::kProgress);
  event.mutable_loaded()->set_architecture("z-image");
  EXPECT_EQ(event.event_case(), v1::LoadModelEvent::kLoaded);
}

TEST(WireContract, ServicesExposeTheirMethods) {
  EXPECT_STREQ(v1::ModelService::service_full_name(), "diffusiond.v1.ModelService");
  EXPECT_STREQ(v1::DenoiseService::service_full_name(), "diffusiond.v1.DenoiseService");
  EXPECT_STREQ(v1::CacheService::service_full_name(), "diffusiond.v1.CacheService");
}

}  // namespace
}  // namespace diffusiond
