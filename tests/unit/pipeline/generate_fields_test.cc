// Every GenerateRequest field, for every family that can run end to end
// (Z-Image, FLUX.1-dev and FLUX.1-schnell), is either used (changing the
// image) or refused with INVALID_ARGUMENT naming it: never dropped. Each row
// changes one field of a request the family runs, on random-weight pipeline
// folders through a real Engine.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/engine/engine.h"
#include "core/memory/budget.h"
#include "core/pipeline/generate.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/engine_under_budget.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tools/random_models/flux_pipeline_random.h"
#include "tools/random_models/pipeline_random.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;

// One row: the field, how it is changed, and whether the family uses it
// (the images change) or refuses it (INVALID_ARGUMENT naming `field`).
// `given`, when set, is applied to the base request and the changed one
// alike (a mask is compared with the same init image without it).
struct FieldRow {
  const char* field;
  std::function<void(GenerateRequest&)> change;
  bool used;
  std::function<void(GenerateRequest&)> given = nullptr;
};

// A 32x32 init image and a mask over its middle, not on the 8-pixel grid.
torch::Tensor init_image() {
  return torch::linspace(0, 1, 3 * 32 * 32, torch::kFloat32).reshape({3, 32, 32}).flip(2);
}
torch::Tensor init_mask() {
  torch::Tensor m = torch::zeros({32, 32});
  m.index_put_({torch::indexing::Slice(5, 21), torch::indexing::Slice(9, 27)}, 1.0f);
  return m;
}
void with_image(GenerateRequest& r) { r.image = init_image(); }
void with_mask(GenerateRequest& r) {
  r.image = init_image();
  r.mask_image = init_mask();
}
// padding_mask_crop of a 40x24 image (another size than the request's
// 32x32) around a mask in its middle, in place of image and mask_image.
void with_mask_crop(GenerateRequest& r, int64_t padding) {
  MaskCrop crop;
  crop.padding = padding;
  crop.image = pil_new(PilMode::kRgb, 40, 24);
  for (size_t i = 0; i < crop.image.pixels.size(); ++i) crop.image.pixels[i] = static_cast<uint8_t>(i * 13 % 256);
  crop.mask = pil_new(PilMode::kL, 40, 24);
  for (int64_t y = 8; y < 15; ++y) {
    for (int64_t x = 12; x < 30; ++x) *crop.mask.at(x, y) = 255;
  }
  r.image = torch::Tensor();
  r.mask_image = torch::Tensor();
  r.padding_mask_crop = std::move(crop);
}

class GenerateFieldsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    models_dir_ = dir_.path("models");
    ASSERT_THAT(write_random_pipeline(demo_pipeline_sizes(), models_dir_ + "/z-image", 3), IsOk());
    ASSERT_THAT(write_random_flux_pipeline(demo_flux_pipeline_sizes(), models_dir_ + "/flux-dev", 5), IsOk());
    FluxPipelineSizes schnell = demo_flux_pipeline_sizes();
    schnell.transformer.guidance_embeds = false;
    ASSERT_THAT(write_random_flux_pipeline(schnell, models_dir_ + "/flux-schnell", 5), IsOk());
    EngineOptions o;
    o.models_dir = models_dir_;
    o.fp8 = Fp8Options{std::nullopt, Fp8Scaling::kNone};
    ASSERT_THAT(::diffusiond::testing::start_engine(o, int64_t{1} << 32, &ram_, &engine_), IsOk());
  }

  static GenerateRequest base(const std::string& pipeline) {
    GenerateRequest r;
    r.pipeline = pipeline;
    r.prompt = "a lighthouse at dawn";
    r.width = 32;
    r.height = 32;
    r.steps = 2;
    r.seed = 7;
    return r;
  }

  // Runs every row against `pipeline`'s base request, each from an empty
  // cache, so that a row's component options load as asked.
  void walk(const std::string& pipeline, const std::vector<FieldRow>& rows) {
    for (const FieldRow& row : rows) {
      GenerateRequest given = base(pipeline);
      if (row.given) row.given(given);
      engine_->unload_all(absl::Seconds(10));
      absl::StatusOr<std::vector<GeneratedImage>> plain = generate_images(*engine_, models_dir_, given);
      ASSERT_THAT(plain, IsOk()) << pipeline << ": " << row.field << "'s base";
      GenerateRequest r = given;
      row.change(r);
      engine_->unload_all(absl::Seconds(10));
      absl::StatusOr<std::vector<GeneratedImage>> changed = generate_images(*engine_, models_dir_, r);
      if (row.used) {
        ASSERT_THAT(changed, IsOk()) << pipeline << ": " << row.field;
        bool differs = changed->size() != plain->size();
        for (size_t k = 0; !differs && k < changed->size(); ++k) {
          const torch::Tensor& a = (*changed)[k].pixels;
          const torch::Tensor& b = (*plain)[k].pixels;
          differs = !a.sizes().equals(b.sizes()) || !torch::equal(a, b);
        }
        EXPECT_TRUE(differs) << pipeline << ": " << row.field << " was accepted and changed nothing";
      } else {
        EXPECT_TRUE(absl::IsInvalidArgument(changed.status())) << pipeline << ": " << row.field << " gave "
                                                               << changed.status();
        EXPECT_THAT(std::string(changed.status().message()), ::testing::HasSubstr(row.field))
            << pipeline << ": the refusal names the field";
      }
    }
  }

  testing::TempDir dir_;
  std::string models_dir_;
  std::unique_ptr<Budget> ram_;
  std::unique_ptr<Engine> engine_;
};

// The rows every family shares: what draws and shapes the image, and the
// image inputs (Z-Image and FLUX.1 have img2img and inpainting upstream).
std::vector<FieldRow> common_rows() {
  return {{"prompt", [](GenerateRequest& r) { r.prompt = "a red fox in the snow"; }, true},
          {"image", with_image, true},
          {"mask_image", [](GenerateRequest& r) { r.mask_image = init_mask(); }, true, with_image},
          {"padding_mask_crop", [](GenerateRequest& r) { with_mask_crop(r, -1); }, false, with_mask},
          // 0.3 of 2 steps starts at the second (the default, 0.6 or 1.0, at the first).
          {"strength", [](GenerateRequest& r) { r.strength = 0.3; }, true, with_image},
          {"strength", [](GenerateRequest& r) { r.strength = 0.3; }, false},
          {"num_images_per_prompt", [](GenerateRequest& r) { r.num_images_per_prompt = 2; }, true},
          {"seeds", [](GenerateRequest& r) {
             r.seed = 0;
             r.seeds = {8};
           },
           true},
          {"seeds", [](GenerateRequest& r) { r.seeds = {8}; }, false},
          // linspace(1, 0.5, 2) is the default: these differ from it.
          {"sigmas", [](GenerateRequest& r) {
             r.steps = 0;
             r.sigmas = {0.9f, 0.4f};
           },
           true},
          {"sigmas", [](GenerateRequest& r) { r.sigmas = {0.9f, 0.4f, 0.2f}; }, false},
          {"max_sequence_length", [](GenerateRequest& r) { r.max_sequence_length = 8; }, true},
          {"max_sequence_length", [](GenerateRequest& r) { r.max_sequence_length = 5000; }, false},
          {"width", [](GenerateRequest& r) { r.width = 48; }, true},
          {"height", [](GenerateRequest& r) { r.height = 48; }, true},
          {"steps", [](GenerateRequest& r) { r.steps = 3; }, true},
          {"seed", [](GenerateRequest& r) { r.seed = 8; }, true},
          {"shift", [](GenerateRequest& r) { r.shift = 6.0; }, true},
          {"component_options",
           [](GenerateRequest& r) { r.component_options["transformer"].compute_dtype = ComputeDtype::kBFloat16; },
           true}};
}

TEST_F(GenerateFieldsTest, ZImageUsesOrRefusesEveryField) {
  std::vector<FieldRow> rows = common_rows();
  rows.push_back({"guidance_scale", [](GenerateRequest& r) { r.guidance_scale = 3.0; }, true});
  rows.push_back({"negative_prompt", [](GenerateRequest& r) {
                    r.guidance_scale = 3.0;
                    r.negative_prompt = "blurry";
                  },
                  true});
  rows.push_back({"negative_prompt", [](GenerateRequest& r) {
                    r.guidance_scale = 0.0;
                    r.negative_prompt = "blurry";
                  },
                  false});
  rows.push_back({"legacy_guidance_scale", [](GenerateRequest& r) { r.legacy_guidance_scale = 3.0; }, true});
  rows.push_back({"legacy_guidance_scale", [](GenerateRequest& r) {
                    r.guidance_scale = 2.0;
                    r.legacy_guidance_scale = 3.0;
                  },
                  false});
  rows.push_back({"true_cfg_scale", [](GenerateRequest& r) { r.true_cfg_scale = 3.0; }, false});
  rows.push_back({"component_options",
                  [](GenerateRequest& r) { r.component_options["text_encoder_2"].compute_dtype = ComputeDtype::kFloat32; },
                  false});
  // A video family's fields: an image family has no frames and one expert.
  rows.push_back({"num_frames", [](GenerateRequest& r) { r.num_frames = 5; }, false});
  rows.push_back({"guidance_scale_2", [](GenerateRequest& r) {
                    r.guidance_scale = 3.0;
                    r.guidance_scale_2 = 2.0;
                  },
                  false});
  // ZImageInpaintPipeline has no padding_mask_crop.
  rows.push_back({"padding_mask_crop", [](GenerateRequest& r) { with_mask_crop(r, 4); }, false, with_mask});
  walk("z-image", rows);
}

TEST_F(GenerateFieldsTest, FluxDevUsesOrRefusesEveryField) {
  std::vector<FieldRow> rows = common_rows();
  rows.push_back({"guidance_scale", [](GenerateRequest& r) { r.guidance_scale = 7.0; }, true});
  rows.push_back({"true_cfg_scale", [](GenerateRequest& r) {
                    r.true_cfg_scale = 3.0;
                    r.negative_prompt = "blurry";
                  },
                  true});
  rows.push_back({"negative_prompt", [](GenerateRequest& r) { r.negative_prompt = "blurry"; }, false});
  rows.push_back({"true_cfg_scale", [](GenerateRequest& r) { r.true_cfg_scale = 3.0; }, false});
  rows.push_back({"padding_mask_crop", [](GenerateRequest& r) { with_mask_crop(r, 4); }, true, with_mask});
  walk("flux-dev", rows);
}

TEST_F(GenerateFieldsTest, FluxSchnellRefusesTheGuidanceItHasNoEmbeddingFor) {
  std::vector<FieldRow> rows = common_rows();
  rows.push_back({"guidance_scale", [](GenerateRequest& r) { r.guidance_scale = 3.5; }, false});
  rows.push_back({"true_cfg_scale", [](GenerateRequest& r) {
                    r.true_cfg_scale = 3.0;
                    r.negative_prompt = "blurry";
                  },
                  true});
  walk("flux-schnell", rows);
}

}  // namespace
}  // namespace diffusiond
