// generate_request: the API's Generate request as core's. Negative sizes
// and steps are refused before anything loads; zeros take the API's
// defaults; the rest is passed through for generate() to check.
#include <png.h>

#include <cstring>
#include <limits>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "core/image/png.h"
#include "server/pipeline_service.h"
#include "server/wire_tensor.h"
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

TEST(GenerateRequest, AdaptersArePassedOnWithTheirWeights) {
  v1::GenerateRequest wire;
  wire.set_pipeline("flux");
  wire.set_prompt("x");
  v1::Adapter* a = wire.add_adapters();
  a->set_path("style.safetensors");
  a->set_weight(0.8);
  absl::StatusOr<GenerateRequest> r = generate_request(wire);
  ASSERT_THAT(r, IsOk());
  ASSERT_EQ(r->adapters.size(), 1u);
  EXPECT_EQ(r->adapters[0].path, "style.safetensors");
  EXPECT_EQ(r->adapters[0].weight, 0.8);
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

// Guidance: the optional field is upstream's meaning, and unset stays
// unset (the family's default); the former field 10 is read apart.
TEST(GenerateRequest, GuidanceScaleIsPresentOnlyWhenSet) {
  v1::GenerateRequest wire;
  absl::StatusOr<GenerateRequest> r = generate_request(wire);
  ASSERT_THAT(r, IsOk());
  EXPECT_FALSE(r->guidance_scale.has_value());
  EXPECT_FALSE(r->legacy_guidance_scale.has_value());
  wire.set_guidance_scale(0.0);  // Z-Image's CFG off: a value, not "unset"
  wire.set_legacy_guidance_scale(4.0);
  r = generate_request(wire);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->guidance_scale, 0.0);
  EXPECT_EQ(r->legacy_guidance_scale, 4.0);
}

// A video family's fields: num_frames as given (generate() checks it),
// guidance_scale_2 only when set; a video_format no daemon knows is refused.
TEST(GenerateRequest, VideoFieldsArePassedOnAndAnUnknownFormatRefused) {
  v1::GenerateRequest wire;
  wire.set_pipeline("wan");
  absl::StatusOr<GenerateRequest> r = generate_request(wire);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->num_frames, 0);
  EXPECT_FALSE(r->guidance_scale_2.has_value());
  wire.set_num_frames(33);
  wire.set_guidance_scale_2(1.0);
  wire.set_video_format(v1::VIDEO_FORMAT_PNG_FRAMES);
  r = generate_request(wire);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->num_frames, 33);
  EXPECT_EQ(r->guidance_scale_2, 1.0);
  wire.set_video_format(static_cast<v1::VideoFormat>(7));
  EXPECT_THAT(generate_request(wire).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("video_format 7 is none of")));
}

// Image inputs arrive as PNG bytes or tensors, and become float [3, H, W]
// and [H, W] in [0, 1]; both forms of one input, or bytes that are not a
// PNG, are refused naming the field.
TEST(GenerateRequest, ImageInputsArePngsOrTensors) {
  const uint8_t rgb[2 * 3 * 3] = {0, 128, 255, 10, 20, 30, 255, 255, 255, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  absl::StatusOr<std::string> png = encode_png(rgb, 3, 2, {});
  ASSERT_THAT(png, IsOk());
  v1::GenerateRequest wire;
  wire.set_image(*png);
  wire.set_mask_image(*png);
  absl::StatusOr<GenerateRequest> r = generate_request(wire);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->image.sizes().vec(), (std::vector<int64_t>{3, 2, 3}));
  EXPECT_FLOAT_EQ(r->image[1][0][0].item<float>(), 128.0f / 255.0f);
  EXPECT_EQ(r->mask_image.sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_FLOAT_EQ(r->mask_image[0][2].item<float>(), 1.0f);  // white
  // PIL's grey of (0, 128, 255): (38470·128 + 7471·255 + 2^15) >> 16 = 104.
  EXPECT_FLOAT_EQ(r->mask_image[0][0].item<float>(), 104.0f / 255.0f);

  v1::GenerateRequest tensors;
  ASSERT_THAT(to_wire(torch::full({1, 3, 4, 5}, 0.25f), tensors.mutable_image_tensor()), IsOk());
  ASSERT_THAT(to_wire(torch::ones({1, 1, 4, 5}), tensors.mutable_mask_tensor()), IsOk());
  r = generate_request(tensors);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->image.sizes().vec(), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(r->mask_image.sizes().vec(), (std::vector<int64_t>{4, 5}));

  tensors.set_image(*png);
  EXPECT_THAT(generate_request(tensors).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("give image or image_tensor, not both")));
  wire.set_mask_image("not a png");
  EXPECT_THAT(generate_request(wire).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("mask_image")));
}

// A PNG of `format` (libpng's simplified API): another colour type than
// encode_png's RGB.
std::string png_of(int width, int height, png_uint_32 format, const void* pixels) {
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  image.width = width;
  image.height = height;
  image.format = format;
  png_alloc_size_t size = 0;
  EXPECT_TRUE(png_image_write_get_memory_size(image, size, 0, pixels, 0, nullptr));
  std::string out(size, '\0');
  EXPECT_TRUE(png_image_write_to_memory(&image, out.data(), &size, 0, pixels, 0, nullptr));
  out.resize(size);
  return out;
}

// padding_mask_crop takes the PNGs as Pillow opens them (grey "L", "RGB"),
// in place of the image tensors; what upstream could not crop is refused
// naming the field, before anything loads.
TEST(GenerateRequest, PaddingMaskCropTakesThePngsAsPillowOpensThem) {
  const uint8_t rgb[2 * 3 * 3] = {0, 128, 255, 10, 20, 30, 255, 255, 255, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  absl::StatusOr<std::string> image = encode_png(rgb, 3, 2, {});
  ASSERT_THAT(image, IsOk());
  const uint8_t grey[6] = {0, 0, 255, 0, 9, 0};
  const std::string mask = png_of(3, 2, PNG_FORMAT_GRAY, grey);
  v1::GenerateRequest wire;
  wire.set_image(*image);
  wire.set_mask_image(mask);
  wire.set_padding_mask_crop(0);  // set: 0 is a crop to the mask's box, as upstream's
  absl::StatusOr<GenerateRequest> r = generate_request(wire);
  ASSERT_THAT(r, IsOk());
  ASSERT_TRUE(r->padding_mask_crop.has_value());
  EXPECT_FALSE(r->image.defined() || r->mask_image.defined());
  EXPECT_EQ(r->padding_mask_crop->padding, 0);
  EXPECT_EQ(r->padding_mask_crop->image.mode, PilMode::kRgb);
  EXPECT_EQ(r->padding_mask_crop->image.pixels, std::vector<uint8_t>(rgb, rgb + 18));
  EXPECT_EQ(r->padding_mask_crop->mask.mode, PilMode::kL);
  EXPECT_EQ(r->padding_mask_crop->mask.pixels, std::vector<uint8_t>(grey, grey + 6));
  wire.clear_padding_mask_crop();
  r = generate_request(wire);
  ASSERT_THAT(r, IsOk());
  EXPECT_FALSE(r->padding_mask_crop.has_value());
  EXPECT_TRUE(r->image.defined() && r->mask_image.defined());

  const auto refused = [&](const v1::GenerateRequest& w, const std::string& message) {
    EXPECT_THAT(generate_request(w).status(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)));
  };
  wire.set_padding_mask_crop(-1);
  refused(wire, "padding_mask_crop must be >= 0");
  wire.set_padding_mask_crop(8);
  v1::GenerateRequest no_mask = wire;
  no_mask.clear_mask_image();
  refused(no_mask, "padding_mask_crop needs mask_image");
  v1::GenerateRequest no_image = wire;
  no_image.clear_image();
  refused(no_image, "padding_mask_crop needs image");
  v1::GenerateRequest tensor = wire;
  tensor.clear_mask_image();
  ASSERT_THAT(to_wire(torch::ones({2, 3}), tensor.mutable_mask_tensor()), IsOk());
  refused(tensor, "padding_mask_crop takes image and mask_image as PNG bytes, not mask_tensor");
  const uint8_t rgba[2 * 3 * 4] = {};
  v1::GenerateRequest alpha = wire;
  alpha.set_mask_image(png_of(3, 2, PNG_FORMAT_RGBA, rgba));
  refused(alpha, "mask_image: padding_mask_crop takes 8-bit grey or RGB PNGs without transparency");
  const uint16_t grey16[6] = {};
  v1::GenerateRequest deep = wire;
  deep.set_image(png_of(3, 2, PNG_FORMAT_LINEAR_Y, grey16));
  refused(deep, "this one is 16-bit grey");
}

}  // namespace
}  // namespace diffusiond
