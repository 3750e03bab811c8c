// generate_request: the API's Generate request as core's. Negative sizes
// and steps are refused before anything loads; zeros take the API's
// defaults; the rest is passed through for generate() to check.
#include <limits>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/pipeline_service.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;

TEST(GenerateRequest, ZerosAreLeftForThePipelinesDefaults) {
  v1::GenerateRequest wire;
  wire.set_pipeline("z-image");
  wire.set_prompt("a cat");
  wire.set_seed(42);
  absl::StatusOr<GenerateRequest> r = generate_request(wire);
  ASSERT_THAT(r, IsOk());
  // The family's defaults are applied by generate(), the one place they live.
  EXPECT_EQ(r->width, 0);
  EXPECT_EQ(r->height, 0);
  EXPECT_EQ(r->steps, 0);
  EXPECT_EQ(r->pipeline, "z-image");
  EXPECT_EQ(r->prompt, "a cat");
  EXPECT_EQ(r->seed, 42u);
}

TEST(GenerateRequest, ComponentsComeFromTheMapAndTheAliasesTheMapWinning) {
  v1::GenerateRequest wire;
  wire.set_text_encoder("te");
  wire.set_vae("old-vae");
  (*wire.mutable_components())["vae"] = "new-vae";
  (*wire.mutable_components())["text_encoder_2"] = "t5";
  absl::StatusOr<GenerateRequest> r = generate_request(wire);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->components, (std::map<std::string, std::string>{
                               {"text_encoder", "te"}, {"text_encoder_2", "t5"}, {"vae", "new-vae"}}));
}

TEST(GenerateRequest, TooManyOrMisnamedComponentsAreRefused) {
  v1::GenerateRequest wire;
  (*wire.mutable_components())["../vae"] = "x";
  EXPECT_THAT(generate_request(wire).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a pipeline component's folder name")));
  wire.clear_components();
  for (int i = 0; i < 17; ++i) (*wire.mutable_components())["c" + std::to_string(i)] = "x";
  EXPECT_THAT(generate_request(wire).status(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at most 16")));
}

TEST(GenerateRequest, NegativeSizesOrStepsAreRefused) {
  for (auto [width, height, steps] : {std::tuple{-16, 512, 8}, std::tuple{512, -1, 8}, std::tuple{512, 512, -1},
                                      std::tuple{std::numeric_limits<int32_t>::min(), 0, 0}}) {
    v1::GenerateRequest wire;
    wire.set_pipeline("p");
    wire.set_width(width);
    wire.set_height(height);
    wire.set_steps(steps);
    EXPECT_THAT(generate_request(wire).status(),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must not be negative")))
        << width << "x" << height << ", " << steps;
  }
}

TEST(GenerateRequest, OtherValuesArePassedOnForGenerateToCheck) {
  // Not multiples of 16, 10^6 steps, NaN guidance: core's generate()
  // refuses them for every caller (pipeline/generate_test.cc).
  v1::GenerateRequest wire;
  wire.set_pipeline("p");
  wire.set_width(1000);
  wire.set_steps(1000000);
  wire.set_guidance_scale(std::numeric_limits<double>::quiet_NaN());
  absl::StatusOr<GenerateRequest> r = generate_request(wire);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->width, 1000);
  EXPECT_EQ(r->steps, 1000000);
}

}  // namespace
}  // namespace diffusiond
