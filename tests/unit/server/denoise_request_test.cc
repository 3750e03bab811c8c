// denoise_request: hostile Denoise options (10^6 steps, NaN or infinite
// guidance and shift, too many sigmas, NaN or infinite initial latents) are
// refused before the engine.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/denoise_service.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;

v1::DenoiseRequest valid_request() {
  v1::DenoiseRequest r;
  r.set_model_id("m");
  for (int64_t d : {16, 8, 8}) r.add_latent_shape(d);
  v1::NamedTensor* t = r.mutable_conditioning()->add_tensors();
  t->set_name("caption");
  t->mutable_tensor()->set_dtype(v1::DTYPE_FLOAT32);
  t->mutable_tensor()->add_shape(1);
  t->mutable_tensor()->set_data(std::string(4, '\0'));
  r.set_steps(4);
  return r;
}

TEST(DenoiseRequest, AValidRequestPasses) { EXPECT_THAT(denoise_request(valid_request()).status(), IsOk()); }

// Adapters pass on in order, an unset weight as 1; more than the engine
// takes are refused before it.
TEST(DenoiseRequest, AdaptersCarryTheirWeights) {
  v1::DenoiseRequest r = valid_request();
  v1::Adapter* a = r.add_adapters();
  a->set_path("loras/a.safetensors");
  a->set_weight(-0.3);
  r.add_adapters()->set_path("b.safetensors");
  absl::StatusOr<EngineDenoiseRequest> engine = denoise_request(r);
  ASSERT_THAT(engine, IsOk());
  ASSERT_EQ(engine->adapters.size(), 2u);
  EXPECT_EQ(engine->adapters[0].path, "loras/a.safetensors");
  EXPECT_EQ(engine->adapters[0].weight, -0.3);
  EXPECT_EQ(engine->adapters[1].path, "b.safetensors");
  EXPECT_EQ(engine->adapters[1].weight, 1.0);
  for (size_t i = 0; i < kMaxCallAdapters; ++i) r.add_adapters()->set_path("c.safetensors");
  EXPECT_THAT(denoise_request(r), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at most 16")));
}

TEST(DenoiseRequest, AMillionStepsOrNegativeStepsAreRefused) {
  v1::DenoiseRequest r = valid_request();
  r.set_steps(1000000);
  EXPECT_THAT(denoise_request(r).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("steps must be in [0, 1000]")));
  r.set_steps(-1);
  EXPECT_THAT(denoise_request(r).status(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got -1")));
}

TEST(DenoiseRequest, NonFiniteOrNegativeGuidanceAndShiftAreRefused) {
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity(), -1.0}) {
    v1::DenoiseRequest r = valid_request();
    r.set_guidance_scale(bad);
    EXPECT_THAT(denoise_request(r).status(),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("guidance_scale must be finite")))
        << bad;
    r = valid_request();
    r.set_shift(bad);
    EXPECT_THAT(denoise_request(r).status(),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("shift must be finite")))
        << bad;
  }
}

TEST(DenoiseRequest, ASecondExpertNeedsItsBoundaryAndCarriesItsGuidance) {
  v1::DenoiseRequest r = valid_request();
  r.set_expert_2("low-noise");
  r.set_boundary_ratio(0.875);
  r.set_guidance_scale_2(3.0);
  absl::StatusOr<EngineDenoiseRequest> engine = denoise_request(r);
  ASSERT_THAT(engine, IsOk());
  ASSERT_EQ(engine->later_segments.size(), 1u);  // expert_2 is an alias of one later segment
  EXPECT_EQ(engine->later_segments[0].model, "low-noise");
  EXPECT_EQ(engine->later_segments[0].boundary_ratio, 0.875);
  EXPECT_EQ(engine->later_segments[0].guidance_scale, 3.0);
  for (double ratio : {0.0, -0.5, 1.5, std::nan("")}) {
    r.set_boundary_ratio(ratio);
    EXPECT_THAT(denoise_request(r).status(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("boundary_ratio")))
        << ratio;
  }
  r.set_boundary_ratio(0.9);
  r.set_guidance_scale_2(-1);
  EXPECT_THAT(denoise_request(r).status(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("guidance_scale_2")));
  r = valid_request();
  r.set_boundary_ratio(0.9);
  EXPECT_THAT(denoise_request(r).status(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expert_2")));
}

TEST(DenoiseRequest, LaterSegmentsCarryOverInOrderWithDecreasingBoundaries) {
  v1::DenoiseRequest r = valid_request();
  const auto add = [&](const std::string& id, double boundary, double guidance) {
    v1::DenoiseSegment* s = r.add_later_segments();
    s->set_model_id(id);
    s->set_boundary_ratio(boundary);
    s->set_guidance_scale(guidance);
  };
  add("low", 0.875, 3.0);
  add("refiner", 0.2, 0);
  absl::StatusOr<EngineDenoiseRequest> engine = denoise_request(r);
  ASSERT_THAT(engine, IsOk());
  ASSERT_EQ(engine->later_segments.size(), 2u);
  EXPECT_EQ(engine->later_segments[1].model, "refiner");
  EXPECT_EQ(engine->later_segments[1].boundary_ratio, 0.2);
  add("late", 0.5, 0);  // above the segment before it
  EXPECT_THAT(denoise_request(r).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("later_segments[2].boundary_ratio")));
  r = valid_request();
  add("", 0.5, 0);
  EXPECT_THAT(denoise_request(r).status(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("names no model_id")));
  r = valid_request();
  add("low", 0.5, -1);
  EXPECT_THAT(denoise_request(r).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("later_segments[0].guidance_scale")));
  r = valid_request();
  add("low", 0.5, 0);
  r.set_expert_2("other");
  r.set_boundary_ratio(0.9);
  EXPECT_THAT(denoise_request(r).status(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not both")));
}

TEST(DenoiseRequest, MoreSigmasThanStepsAllowedAreRefused) {
  v1::DenoiseRequest r = valid_request();
  for (int i = 0; i < 1001; ++i) r.add_sigmas(1.0f - static_cast<float>(i) / 1001);
  EXPECT_THAT(denoise_request(r).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at most 1000 sigmas")));
}

TEST(DenoiseRequest, NanOrInfiniteInitialLatentsAreRefused) {
  for (float bad : {std::nanf(""), std::numeric_limits<float>::infinity()}) {
    v1::DenoiseRequest r = valid_request();
    v1::Tensor* latents = r.mutable_initial_latents();
    latents->set_dtype(v1::DTYPE_FLOAT32);
    for (int64_t d : {16, 1, 2}) latents->add_shape(d);
    std::string data(16 * 2 * sizeof(float), '\0');
    std::memcpy(data.data() + 5 * sizeof(float), &bad, sizeof(bad));
    latents->set_data(data);
    EXPECT_THAT(denoise_request(r).status(),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("initial_latents: float32 element 5")))
        << bad;
    std::memset(data.data() + 5 * sizeof(float), 0, sizeof(float));
    latents->set_data(data);
    EXPECT_THAT(denoise_request(r).status(), IsOk());
  }
}

}  // namespace
}  // namespace diffusiond
