// Generate through a real Engine over a random-weight FLUX.1-dev pipeline
// folder (CLIP and T5 encoders with their tokenizers, transformer, VAE):
// four components, two of them text encoders feeding one Conditioning, the
// distilled guidance scalar, and a budget that cannot hold all four at
// once, where Generate must evict and reload as its events say, produce the
// same image, and never over-commit.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "core/engine/engine.h"
#include "core/memory/budget.h"
#include "core/pipeline/flux/flux_pipeline.h"
#include "core/pipeline/generate.h"
#include "core/pipeline/prompt_encoding.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/engine_under_budget.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tools/random_models/flux_pipeline_random.h"
#include "tools/random_models/lora_random.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using Stage = GenerateEvent::Stage;

constexpr const char* kComponents[] = {"text_encoder", "text_encoder_2", "transformer", "vae"};

class FluxGenerateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    models_dir_ = dir_.path("models");
    ASSERT_THAT(write_random_flux_pipeline(demo_flux_pipeline_sizes(), models_dir_ + "/flux", 5), IsOk());
  }

  void start(int64_t capacity) {
    EngineOptions o;
    o.models_dir = models_dir_;
    ASSERT_THAT(::diffusiond::testing::start_engine(o, capacity, &ram_, &engine_), IsOk());
  }

  static GenerateRequest request() {
    GenerateRequest r;
    r.pipeline = "flux";
    r.prompt = "a lighthouse at dawn";
    r.width = 64;
    r.height = 48;
    r.steps = 2;
    r.seed = 9;
    return r;
  }

  absl::StatusOr<GeneratedImage> run(std::vector<GenerateEvent>* events) {
    GenerateOptions options;
    options.on_event = [&](const GenerateEvent& e) {
      events->push_back(e);
      EXPECT_GE(ram_->available_bytes(), 0) << "over-committed";
      EXPECT_LE(ram_->snapshot().high_water_bytes, ram_->capacity_bytes());
    };
    return generate(*engine_, models_dir_, request(), options);
  }

  testing::TempDir dir_;
  std::string models_dir_;
  std::unique_ptr<Budget> ram_;
  std::unique_ptr<Engine> engine_;
};

std::vector<std::string> ids_of(const std::vector<GenerateEvent>& events, Stage stage) {
  std::vector<std::string> ids;
  for (const GenerateEvent& e : events) {
    if (e.stage == stage) ids.push_back(e.model_id);
  }
  return ids;
}

TEST_F(FluxGenerateTest, PromptToPixelsThroughFourComponentsWithDevDefaults) {
  start(int64_t{1} << 32);
  std::vector<GenerateEvent> events;
  absl::StatusOr<GeneratedImage> image = run(&events);
  ASSERT_THAT(image, IsOk());
  EXPECT_EQ(image->pixels.sizes().vec(), (std::vector<int64_t>{48, 64, 3}));
  EXPECT_EQ(ids_of(events, Stage::kLoad),
            (std::vector<std::string>{"flux/text_encoder", "flux/text_encoder_2", "flux/transformer", "flux/vae"}));
  EXPECT_EQ(ids_of(events, Stage::kEncode), (std::vector<std::string>{"flux/text_encoder", "flux/text_encoder_2"}));
  EXPECT_EQ(ids_of(events, Stage::kDenoise).size(), 2u);
  EXPECT_TRUE(ids_of(events, Stage::kEvict).empty());
  // FLUX.1-dev's distilled guidance defaults to 3.5.
  EXPECT_THAT(image->parameters[0].second, HasSubstr("\"guidance_scale\":3.5"));
  EXPECT_THAT(image->parameters[0].second, HasSubstr("\"pipeline\":\"flux\""));
}

// A LoRA on the transformer changes the image, is loaded once (a load
// event naming its key), and is recorded in the image's parameters; the
// next request without it makes the image without it again.
TEST_F(FluxGenerateTest, AdaptersApplyToTheDenoiserForTheirRequestOnly) {
  start(int64_t{1} << 32);
  const FluxConfig t = demo_flux_pipeline_sizes().transformer;
  ASSERT_THAT(write_lora_file(models_dir_ + "/style.safetensors",
                                       peft_lora_module("proj_out", t.inner_dim(), t.out_features(), 4, 3)),
              IsOk());
  std::vector<GenerateEvent> plain_events;
  absl::StatusOr<GeneratedImage> plain = run(&plain_events);
  ASSERT_THAT(plain, IsOk());

  GenerateRequest r = request();
  r.adapters = {{"style.safetensors", 4.0}};
  std::vector<GenerateEvent> events;
  GenerateOptions options;
  options.on_event = [&](const GenerateEvent& e) { events.push_back(e); };
  absl::StatusOr<GeneratedImage> styled = generate(*engine_, models_dir_, r, options);
  ASSERT_THAT(styled, IsOk());
  EXPECT_FALSE(torch::equal(styled->pixels, plain->pixels));
  const std::string key = "lora:flux:float32:style.safetensors";
  const std::vector<std::string> first_loads = ids_of(events, Stage::kLoad);
  EXPECT_EQ(std::count(first_loads.begin(), first_loads.end(), key), 1);
  EXPECT_THAT(styled->parameters[0].second, HasSubstr("\"adapters\":[{\"path\":\"style.safetensors\",\"weight\":4.0}]"));
  // Cached: a second request loads nothing.
  events.clear();
  ASSERT_THAT(generate(*engine_, models_dir_, r, options), IsOk());
  const std::vector<std::string> loads = ids_of(events, Stage::kLoad);
  EXPECT_EQ(std::count(loads.begin(), loads.end(), key), 0);

  std::vector<GenerateEvent> again_events;
  absl::StatusOr<GeneratedImage> again = run(&again_events);
  ASSERT_THAT(again, IsOk());
  EXPECT_TRUE(torch::equal(again->pixels, plain->pixels));
}

// A kohya module `name` of rank 4 ([in] to [out]), with alpha 4 (scale 1).
LoraTensors kohya_lora_module(const std::string& name, int64_t in, int64_t out, uint64_t seed) {
  LoraTensors t = peft_lora_module("m", in, out, 4, seed);
  return {{name + ".lora_down.weight", t[0].second}, {name + ".lora_up.weight", t[1].second},
          {name + ".alpha", torch::full({}, 4.0)}};
}

// A file's text-encoder modules apply to the pipeline's encoders (CLIP's
// and T5's here), loaded once with the denoiser's; modules for an encoder
// the pipeline lacks are named as not applied on every request.
TEST_F(FluxGenerateTest, AnAdaptersTextEncoderModulesApplyToTheEncoders) {
  start(int64_t{1} << 32);
  const FluxPipelineSizes sizes = demo_flux_pipeline_sizes();
  const int64_t d = sizes.transformer.inner_dim(), clip = sizes.clip.hidden_size;
  const int64_t t5 = sizes.t5.d_model, t5_inner = sizes.t5.num_heads * sizes.t5.d_kv;
  const LoraTensors unet = kohya_lora_module("lora_unet_double_blocks_0_img_attn_proj", d, d, 5);
  const LoraTensors te1 = kohya_lora_module("lora_te1_text_model_encoder_layers_0_self_attn_q_proj", clip, clip, 6);
  const LoraTensors te2 = kohya_lora_module("lora_te2_encoder_block_0_layer_0_SelfAttention_q", t5, t5_inner, 7);
  const LoraTensors te3 = kohya_lora_module("lora_te3_text_model_encoder_layers_0_self_attn_q_proj", clip, clip, 8);
  const auto join = [](std::initializer_list<LoraTensors> parts) {
    LoraTensors all;
    for (const LoraTensors& p : parts) all.insert(all.end(), p.begin(), p.end());
    return all;
  };
  ASSERT_THAT(write_lora_file(models_dir_ + "/unet.safetensors", unet), IsOk());
  ASSERT_THAT(write_lora_file(models_dir_ + "/with_te.safetensors", join({unet, te1, te2})), IsOk());
  ASSERT_THAT(write_lora_file(models_dir_ + "/with_te3.safetensors", join({unet, te3})), IsOk());
  const auto generate_with = [&](const std::string& file, std::vector<std::string>* details) {
    GenerateRequest r = request();
    r.adapters = {{file, 1.0}};
    GenerateOptions options;
    options.on_event = [&](const GenerateEvent& e) {
      if (e.stage == Stage::kLoad) details->push_back(e.model_id + ": " + e.detail);
    };
    return generate(*engine_, models_dir_, r, options);
  };
  std::vector<std::string> unet_details, te_details, again_details;
  absl::StatusOr<GeneratedImage> unet_only = generate_with("unet.safetensors", &unet_details);
  absl::StatusOr<GeneratedImage> with_te = generate_with("with_te.safetensors", &te_details);
  ASSERT_THAT(unet_only, IsOk());
  ASSERT_THAT(with_te, IsOk());
  // The encoders' terms changed the conditioning, so the image.
  EXPECT_FALSE(torch::equal(with_te->pixels, unet_only->pixels));
  // Loaded once (by the first encoder's call), none of it left out.
  const std::string key = "lora:flux:float32:with_te.safetensors";
  EXPECT_EQ(std::count_if(te_details.begin(), te_details.end(),
                          [&](const std::string& d) { return absl::StartsWith(d, key + ": "); }),
            1);
  EXPECT_THAT(te_details, Not(Contains(HasSubstr("not applied"))));
  for (int i = 0; i < 2; ++i) {  // loaded, then cached: said both times
    std::vector<std::string> details;
    ASSERT_THAT(generate_with("with_te3.safetensors", &details), IsOk());
    EXPECT_THAT(details, Contains(AllOf(HasSubstr("adapter \"with_te3.safetensors\": its 1 text-encoder modules"),
                                        HasSubstr("lora_te3"), HasSubstr("not applied"))));
  }
}

TEST_F(FluxGenerateTest, EachEncoderGivesItsPartAsFluxPipelineAsksForIt) {
  start(int64_t{1} << 32);
  const FluxPipelineSizes sizes = demo_flux_pipeline_sizes();
  // CLIP: the pooled vector, from 77 padded tokens.
  absl::StatusOr<EncodedPrompt> clip = encode_prompt(*engine_, "flux/text_encoder", "a lighthouse", {});
  ASSERT_THAT(clip, IsOk());
  ASSERT_EQ(clip->conditioning.tensors.count("pooled_projections"), 1u);
  EXPECT_EQ(clip->conditioning.tensors.at("pooled_projections").sizes().vec(),
            (std::vector<int64_t>{sizes.clip.hidden_size}));
  // T5: every row of 512, padding included (FluxPipeline passes no mask).
  absl::StatusOr<EncodedPrompt> t5 = encode_prompt(*engine_, "flux/text_encoder_2", "a lighthouse", {});
  ASSERT_THAT(t5, IsOk());
  ASSERT_EQ(t5->conditioning.tensors.count("encoder_hidden_states"), 1u);
  EXPECT_EQ(t5->conditioning.tensors.at("encoder_hidden_states").sizes().vec(),
            (std::vector<int64_t>{kFluxT5MaxTokens, sizes.t5.d_model}));
  EXPECT_LT(t5->tokens, kFluxT5MaxTokens);  // the text's own tokens, not the padding
}

TEST_F(FluxGenerateTest, ABudgetForThreeOfFourEvictsAndReloadsToTheSameImage) {
  start(int64_t{1} << 32);
  std::vector<GenerateEvent> unconstrained;
  absl::StatusOr<GeneratedImage> reference = run(&unconstrained);
  ASSERT_THAT(reference, IsOk());
  std::map<std::string, int64_t> bytes;
  for (const ModelInfo& m : engine_->list()) bytes[m.model_id] = m.bytes[kCpuIndex];
  ASSERT_EQ(bytes.size(), 4u);
  int64_t all = 0;
  for (const auto& [id, b] : bytes) all += b;
  const int64_t peak = ram_->snapshot().high_water_bytes;
  // One byte short of what the run held at its peak (every model and the
  // denoise's activations): something must go, yet every stage, its model
  // and its activations, still fits.
  const int64_t capacity = peak - 1;
  ASSERT_GT(peak, all);
  start(capacity);
  std::vector<GenerateEvent> events;
  absl::StatusOr<GeneratedImage> image = run(&events);
  ASSERT_THAT(image, IsOk());
  EXPECT_FALSE(ids_of(events, Stage::kEvict).empty()) << "the budget must have forced an eviction";
  EXPECT_TRUE(torch::equal(image->pixels, reference->pixels)) << "eviction must not change the image";
  EXPECT_LE(ram_->snapshot().high_water_bytes, capacity);

  // A second run reloads what was evicted, and says so in order.
  std::vector<GenerateEvent> again;
  ASSERT_THAT(run(&again), IsOk());
  const std::vector<std::string> evicted = ids_of(events, Stage::kEvict);
  for (const std::string& id : evicted) {
    const auto load = std::find_if(again.begin(), again.end(), [&](const GenerateEvent& e) {
      return e.stage == Stage::kLoad && e.model_id == id;
    });
    if (load != again.end() && load->detail != "already loaded") { EXPECT_THAT(load->detail, HasSubstr("loaded")); }
  }
}

// FluxPipeline's true CFG: a negative prompt with true_cfg_scale > 1 is
// encoded by both encoders and guides both passes at the distilled
// guidance; either one alone is refused, never dropped.
TEST_F(FluxGenerateTest, TrueCfgEncodesTheNegativeAndGuidesTheImage) {
  start(int64_t{1} << 32);
  absl::StatusOr<GeneratedImage> plain = generate(*engine_, models_dir_, request());
  ASSERT_THAT(plain, IsOk());
  GenerateRequest r = request();
  r.negative_prompt = "blurry, low quality";
  r.true_cfg_scale = 3.0;
  std::vector<GenerateEvent> events;
  GenerateOptions options;
  options.on_event = [&](const GenerateEvent& e) { events.push_back(e); };
  absl::StatusOr<GeneratedImage> guided = generate(*engine_, models_dir_, r, options);
  ASSERT_THAT(guided, IsOk());
  EXPECT_FALSE(torch::equal(guided->pixels, plain->pixels));
  int negatives = 0;
  for (const GenerateEvent& e : events) {
    if (e.stage == Stage::kEncode && e.detail.find("negative tokens") != std::string::npos) ++negatives;
  }
  EXPECT_EQ(negatives, 2) << "both encoders encode the negative prompt";
  EXPECT_THAT(guided->parameters[0].second, HasSubstr("\"true_cfg_scale\":3.0"));
  EXPECT_THAT(guided->parameters[0].second, HasSubstr("\"negative_prompt\":\"blurry, low quality\""));

  const size_t models = engine_->list().size();
  r = request();
  r.negative_prompt = "blurry";
  EXPECT_THAT(generate(*engine_, models_dir_, r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("needs both a negative_prompt and true_cfg_scale")));
  r = request();
  r.true_cfg_scale = 4.0;
  EXPECT_THAT(generate(*engine_, models_dir_, r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got no negative_prompt and true_cfg_scale 4")));
  r.true_cfg_scale = -1.0;
  EXPECT_THAT(generate(*engine_, models_dir_, r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("true_cfg_scale must be finite and >= 0")));
  EXPECT_EQ(engine_->list().size(), models);
}

// padding_mask_crop: the crop of a 90x70 image around its mask is
// inpainted at 64x48 and pasted back, so the image has the init image's
// size, is the init image's own bytes where the mask is black, and records
// the padding and the box; the refusals come before any load.
TEST_F(FluxGenerateTest, PaddingMaskCropInpaintsTheCropAndPastesItBack) {
  start(int64_t{1} << 32);
  GenerateRequest r = request();
  MaskCrop crop;
  crop.padding = 4;
  crop.image = pil_new(PilMode::kRgb, 90, 70);
  for (size_t i = 0; i < crop.image.pixels.size(); ++i) crop.image.pixels[i] = static_cast<uint8_t>(i * 7 % 251);
  crop.mask = pil_new(PilMode::kL, 90, 70);
  for (int64_t y = 30; y < 41; ++y) {
    for (int64_t x = 40; x < 61; ++x) *crop.mask.at(x, y) = 255;
  }
  r.padding_mask_crop = crop;
  absl::StatusOr<GeneratedImage> image = generate(*engine_, models_dir_, r);
  ASSERT_THAT(image, IsOk());
  ASSERT_EQ(image->pixels.sizes().vec(), (std::vector<int64_t>{70, 90, 3}));
  const torch::Tensor original =
      torch::from_blob(crop.image.pixels.data(), {70, 90, 3}, torch::kUInt8).clone();
  const torch::Tensor kept = torch::from_blob(crop.mask.pixels.data(), {70, 90}, torch::kUInt8).eq(0);
  EXPECT_TRUE(torch::equal(image->pixels.index({kept}), original.index({kept})));
  EXPECT_FALSE(torch::equal(image->pixels, original));
  // The mask's box (40, 30)-(61, 41) padded by 4 is 29x19, grown to 4:3
  // about its centre: upstream's get_crop_region gives (36, 25, 65, 46).
  EXPECT_THAT(image->parameters[0].second, HasSubstr("\"padding_mask_crop\":4"));
  EXPECT_THAT(image->parameters[0].second, HasSubstr("\"crops_coords\":[36,25,65,46]"));
  EXPECT_THAT(image->parameters[0].second, HasSubstr("\"mode\":\"inpaint\""));
  EXPECT_THAT(image->parameters[0].second, HasSubstr("\"width\":64"));

  engine_->unload_all(absl::Seconds(10));
  GenerateRequest bad = r;
  bad.padding_mask_crop->padding = -1;
  EXPECT_THAT(generate(*engine_, models_dir_, bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("padding_mask_crop must be >= 0")));
  bad = r;
  bad.padding_mask_crop->mask = pil_new(PilMode::kL, 90, 70);
  EXPECT_THAT(generate(*engine_, models_dir_, bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("black everywhere")));
  bad = r;
  bad.padding_mask_crop->mask = pil_new(PilMode::kL, 0, 0);
  EXPECT_THAT(generate(*engine_, models_dir_, bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("padding_mask_crop needs mask_image")));
  bad = r;
  bad.padding_mask_crop->mask = pil_new(PilMode::kL, 91, 70);
  EXPECT_THAT(generate(*engine_, models_dir_, bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the same size")));
  bad = r;
  bad.image = torch::zeros({3, 48, 64});
  EXPECT_THAT(generate(*engine_, models_dir_, bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("padding_mask_crop carries its own")));
  EXPECT_TRUE(engine_->list().empty()) << "refused before any load";
}

TEST_F(FluxGenerateTest, ComponentsByNameWithoutAFolderChooseFluxByItsTransformer) {
  start(int64_t{1} << 32);
  GenerateRequest r = request();
  r.pipeline.clear();
  for (const char* c : kComponents) r.components[c] = std::string("flux/") + c;
  std::vector<GenerateEvent> events;
  GenerateOptions options;
  options.on_event = [&](const GenerateEvent& e) { events.push_back(e); };
  ASSERT_THAT(generate(*engine_, models_dir_, r, options), IsOk());
  EXPECT_EQ(ids_of(events, Stage::kEncode).size(), 2u);
}

}  // namespace
}  // namespace diffusiond
