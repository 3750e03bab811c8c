// The registry of pipeline families: every family is found by its
// model_index.json class (read from a pipeline folder too), by its name and
// by its denoiser's architecture; the text encoders of an architecture are
// listed across families; and the three families whose encoders or VAEs are
// not ported yet declare upstream's components.
#include "core/pipeline/pipeline_family.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/pipeline/pipeline_folder.h"
#include "core/pipeline/unported_architectures.h"
#include "core/pipeline/wan/wan_pipeline.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;

struct Served {
  const char* pipeline_class;
  const char* name;
  const char* denoiser;
};
constexpr Served kServed[] = {{"ZImagePipeline", "z-image", "z-image"},
                              {"FluxPipeline", "flux", "flux"},
                              {"QwenImagePipeline", "qwen-image", "qwen-image"},
                              {"WanPipeline", "wan", "wan"},
                              {"Krea2Pipeline", "krea2", "krea2"},
                              {"AnimaModularPipeline", "anima", "cosmos"}};

TEST(PipelineFamilyTest, EachFamilyIsFoundByItsClassItsNameAndItsDenoiser) {
  for (const Served& s : kServed) {
    const PipelineFamily* family = find_pipeline_family(s.pipeline_class);
    ASSERT_NE(family, nullptr) << s.pipeline_class;
    EXPECT_EQ(family->name(), s.name);
    EXPECT_EQ(find_pipeline_family_named(s.name), family) << s.name;
    EXPECT_EQ(find_pipeline_family_for_denoiser(s.denoiser), family) << s.denoiser;
  }
  EXPECT_EQ(find_pipeline_family("StableDiffusionPipeline"), nullptr);
  EXPECT_EQ(find_pipeline_family_named("sdxl"), nullptr);
}

TEST(PipelineFamilyTest, EachFamilyIsFoundFromAPipelineFoldersModelIndex) {
  testing::TempDir dir;
  for (const Served& s : kServed) {
    dir.write(absl::StrCat(s.name, "/model_index.json"),
              absl::StrCat(R"({"_class_name": ")", s.pipeline_class,
                           R"(", "_diffusers_version": "0.36.0", "text_encoder": ["transformers", "X"],
                               "transformer": ["diffusers", "Y"], "vae": ["diffusers", "Z"]})"));
    absl::StatusOr<PipelineFolder> folder = open_pipeline_folder(dir.path(), s.name);
    ASSERT_THAT(folder, IsOk()) << s.name;
    EXPECT_EQ(folder->family->name(), s.name);
    EXPECT_EQ(folder->index.components.size(), 3u);
    // A family's name and its folder name the same family.
    absl::StatusOr<const PipelineFamily*> named = pipeline_family_of(dir.path(), s.name);
    ASSERT_THAT(named, IsOk());
    EXPECT_EQ(*named, folder->family);
  }
  dir.write("sd/model_index.json", R"({"_class_name": "StableDiffusionPipeline"})");
  EXPECT_THAT(open_pipeline_folder(dir.path(), "sd"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is a StableDiffusionPipeline, which no pipeline family serves (ZImagePipeline, "
                                 "FluxPipeline, QwenImagePipeline, WanPipeline, Krea2Pipeline")));
  dir.write("empty/README.md", "not a pipeline");
  EXPECT_THAT(pipeline_family_of(dir.path(), "empty"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("has no model_index.json")));
  EXPECT_THAT(pipeline_family_of(dir.path(), "qwen-imag"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("\"qwen-imag\" is neither a pipeline family (z-image, flux, qwen-image, wan, krea2")));
}

// A modular pipeline saves modular_model_index.json, each component a
// [library, class, spec] triple ([null, null, spec] when not set): read
// like model_index.json, each component the folder of its name.
TEST(PipelineFamilyTest, AModularPipelinesIndexIsRead) {
  testing::TempDir dir;
  dir.write("anima/modular_model_index.json", R"({"_class_name": "AnimaModularPipeline",
      "_blocks_class_name": "AnimaAutoBlocks", "_diffusers_version": "0.40.0.dev0",
      "text_encoder": ["transformers", "Qwen3Model", {"subfolder": "text_encoder", "type_hint": ["transformers", "Qwen3Model"]}],
      "text_conditioner": ["diffusers", "AnimaTextConditioner", {"subfolder": "text_conditioner"}],
      "transformer": ["diffusers", "CosmosTransformer3DModel", {"subfolder": "transformer"}],
      "vae": ["diffusers", "AutoencoderKLQwenImage", {"subfolder": "vae"}],
      "t5_tokenizer": [null, null, {"subfolder": "", "type_hint": ["transformers", "T5TokenizerFast"]}]})");
  absl::StatusOr<PipelineFolder> folder = open_pipeline_folder(dir.path(), "anima");
  ASSERT_THAT(folder, IsOk());
  EXPECT_EQ(folder->family->name(), "anima");
  EXPECT_EQ(folder->index.components.size(), 4u) << "the unset t5_tokenizer is no component";
  EXPECT_EQ(folder->index.components.at("text_conditioner"), "AnimaTextConditioner");
  EXPECT_EQ(folder->index.settings.count("_blocks_class_name"), 0u);
}

TEST(PipelineFamilyTest, TheNewFamiliesDeclareUpstreamsComponents) {
  const auto components = [](absl::string_view family) {
    std::vector<std::string> out;
    for (const PipelineComponent& c : find_pipeline_family_named(family)->components()) {
      out.push_back(absl::StrCat(c.name, ":", model_role_name(c.role), ":", c.architecture, c.optional ? "?" : ""));
    }
    return out;
  };
  EXPECT_THAT(components("qwen-image"),
              ::testing::ElementsAre("text_encoder:text-encoder:qwen2.5-vl", "transformer:denoiser:qwen-image",
                                     "vae:vae:autoencoder-kl-qwen-image"));
  EXPECT_THAT(components("wan"), ::testing::ElementsAre("text_encoder:text-encoder:umt5", "transformer:denoiser:wan",
                                                        "transformer_2:denoiser:wan?", "vae:vae:autoencoder-kl-wan"));
  EXPECT_THAT(components("krea2"),
              ::testing::ElementsAre("text_encoder:text-encoder:qwen3-vl", "transformer:denoiser:krea2",
                                     "vae:vae:autoencoder-kl-qwen-image"));
  EXPECT_THAT(components("anima"),
              ::testing::ElementsAre("text_encoder:text-encoder:qwen3",
                                     "text_conditioner:text-conditioner:anima-conditioner",
                                     "transformer:denoiser:cosmos", "vae:vae:autoencoder-kl-qwen-image"));
  for (absl::string_view architecture :
       {"umt5", "t5", "qwen3", "qwen2.5-vl", "qwen3-vl", "wan", "qwen-image", "krea2", "autoencoder-kl",
        "autoencoder-kl-qwen-image", "autoencoder-kl-wan"}) {
    EXPECT_FALSE(is_unported_architecture(architecture)) << architecture;
  }
}

TEST(PipelineFamilyTest, DefaultsAndLatentsAreUpstreams) {
  const ModelInfo any;
  const struct {
    const char* family;
    int steps;
    int64_t width, height;
    double guidance;
    double cfg;  // the loop's scale for a request of a negative prompt and no scale
  } expected[] = {{"qwen-image", 50, 1024, 1024, 0.0, 4.0},  // true_cfg_scale 4.0; guidance_scale unused
                  {"wan", 50, 832, 480, 5.0, 5.0},
                  {"krea2", 28, 1024, 1024, 4.5, 5.5},  // cond + g·(cond − uncond): s = g + 1
                  {"anima", 50, 1024, 1024, 4.0, 4.0}};  // the guider's uncond + g·(cond − uncond)
  for (const auto& e : expected) {
    const PipelineFamily* family = find_pipeline_family_named(e.family);
    const PipelineDefaults d = family->defaults(any);
    EXPECT_EQ(d.steps, e.steps) << e.family;
    EXPECT_EQ(d.width, e.width) << e.family;
    EXPECT_EQ(d.height, e.height) << e.family;
    EXPECT_EQ(d.guidance_scale, e.guidance) << e.family;
    EXPECT_EQ(family->size_multiple(), 16) << e.family;  // the VAE's 8 times the 2x2 patches
    const absl::StatusOr<double> cfg = family->cfg_scale({std::nullopt, 0, true});
    ASSERT_THAT(cfg, IsOk()) << e.family;
    EXPECT_EQ(*cfg, e.cfg) << e.family;
  }
  ModelInfo denoiser, decoder;
  denoiser.geometry.channels = 16;
  decoder.geometry.spatial_factor = 8;
  decoder.geometry.temporal_factor = 4;
  // Wan's latents have a frames axis: prepare_latents' (F - 1) / 4 + 1.
  EXPECT_EQ(wan_pipeline()->latent_shape(denoiser, decoder, 832, 480, 81), (std::vector<int64_t>{16, 21, 60, 104}));
  EXPECT_EQ(wan_pipeline()->latent_shape(denoiser, decoder, 832, 480, 1), (std::vector<int64_t>{16, 1, 60, 104}));
  EXPECT_EQ(find_pipeline_family_named("qwen-image")->latent_shape(denoiser, decoder, 64, 32, 1),
            (std::vector<int64_t>{16, 4, 8}));
  ASSERT_TRUE(wan_pipeline()->video().has_value());
  EXPECT_EQ(wan_pipeline()->video()->num_frames, 81);
  EXPECT_EQ(wan_pipeline()->video()->fps, 16);
  EXPECT_FALSE(find_pipeline_family_named("qwen-image")->video().has_value());
}

// Wan 2.2's second expert is data: model_index.json's transformer_2 and
// boundary_ratio, each refused without the other.
TEST(PipelineFamilyTest, WansSecondExpertComesFromTheFoldersIndex) {
  const auto handovers = [](const std::string& index, std::vector<std::string> present) {
    absl::StatusOr<PipelineIndex> parsed = parse_pipeline_index(index, "model_index.json");
    EXPECT_THAT(parsed, IsOk());
    return wan_pipeline()->expert_handovers(parsed.ok() ? &*parsed : nullptr, present);
  };
  const std::string wan22 =
      R"({"_class_name": "WanPipeline", "boundary_ratio": 0.875, "expand_timesteps": false,
          "transformer_2": ["diffusers", "WanTransformer3DModel"]})";
  absl::StatusOr<std::vector<ExpertHandover>> two = handovers(wan22, {"transformer_2"});
  ASSERT_THAT(two, IsOk());
  ASSERT_EQ(two->size(), 1u);
  EXPECT_EQ((*two)[0].component, "transformer_2");
  EXPECT_EQ((*two)[0].boundary_ratio, 0.875);
  const std::string wan21 = R"({"_class_name": "WanPipeline", "boundary_ratio": null, "transformer_2": [null, null]})";
  absl::StatusOr<std::vector<ExpertHandover>> one = handovers(wan21, {});
  ASSERT_THAT(one, IsOk());
  EXPECT_TRUE(one->empty());
  EXPECT_THAT(handovers(wan22, {}), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("sets boundary_ratio 0.875 but the pipeline has no transformer_2")));
  EXPECT_THAT(handovers(wan21, {"transformer_2"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("this pipeline folder does not set")));
  EXPECT_THAT(wan_pipeline()->expert_handovers(nullptr, {"transformer_2"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a request without a pipeline folder")));
  EXPECT_THAT(handovers(R"({"_class_name": "WanPipeline", "boundary_ratio": 1.5})", {"transformer_2"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected a number in (0, 1]")));
  EXPECT_THAT(handovers(R"({"_class_name": "WanPipeline", "expand_timesteps": true})", {}),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("expand_timesteps")));
  absl::StatusOr<std::vector<ExpertHandover>> image = find_pipeline_family_named("qwen-image")->expert_handovers(
      nullptr, {});
  ASSERT_THAT(image, IsOk());
  EXPECT_TRUE(image->empty());
}

TEST(PipelineFamilyTest, TextEncodersOfAnArchitectureAreListedAcrossFamilies) {
  const auto found = [](absl::string_view architecture) {
    std::vector<std::string> out;
    for (const EncoderComponent& c : find_encoder_components(architecture)) {
      out.push_back(absl::StrCat(c.family->name(), "/", c.component));
    }
    return out;
  };
  EXPECT_THAT(found("t5"), ::testing::ElementsAre("flux/text_encoder_2"));
  EXPECT_THAT(found("clip-text"), ::testing::ElementsAre("flux/text_encoder"));
  EXPECT_THAT(found("umt5"), ::testing::ElementsAre("wan/text_encoder"));
  EXPECT_THAT(found("qwen2.5-vl"), ::testing::ElementsAre("qwen-image/text_encoder"));
  EXPECT_THAT(found("qwen3-vl"), ::testing::ElementsAre("krea2/text_encoder"));
  // Anima's Qwen3 feeds its text conditioner: EncodePrompt of a Qwen3 is Z-Image's.
  EXPECT_THAT(found("qwen3"), ::testing::ElementsAre("z-image/text_encoder"));
  EXPECT_TRUE(found("wan").empty()) << "a denoiser is no text encoder";
}

// Lookups by name need names to be unique.
class Renamed final : public PipelineFamily {
 public:
  absl::string_view name() const override { return "wan"; }
  std::vector<std::string> pipeline_classes() const override { return {"RenamedPipeline"}; }
  std::vector<PipelineComponent> components() const override { return {}; }
  PipelineDefaults defaults(const ModelInfo&) const override { return {}; }
  TextEncoding text_encoding(absl::string_view, const std::string&) const override { return {}; }
  absl::StatusOr<Conditioning> encoder_conditioning(absl::string_view, const EncodedText&) const override {
    return Conditioning{};
  }
};

TEST(PipelineFamilyTest, AFamilyOfATakenNameIsRefused) {
  static const Renamed* const renamed = new Renamed();
  EXPECT_THAT(register_pipeline_family(renamed),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a pipeline family named wan is already")));
  EXPECT_EQ(find_pipeline_family("RenamedPipeline"), nullptr);
}

// What ListAvailable shows of a family's Generate arguments: each family
// lists the image inputs only where upstream has them, and its guidance
// by upstream's meaning and default.
TEST(PipelineFamilyTest, EachFamilyDeclaresItsArgumentsAndDefaults) {
  const auto find = [](const PipelineFamily* family, const std::string& name) -> const FamilyArgument* {
    static std::vector<FamilyArgument> rows;
    rows = family->arguments();
    for (const FamilyArgument& a : rows) {
      if (a.name == name) return &a;
    }
    return nullptr;
  };
  const PipelineFamily* z_image = find_pipeline_family_named("z-image");
  ASSERT_NE(find(z_image, "guidance_scale"), nullptr);
  EXPECT_EQ(find(z_image, "guidance_scale")->default_value, "5.0");
  EXPECT_EQ(find(z_image, "steps")->default_value, "50");
  EXPECT_NE(find(z_image, "mask_image"), nullptr);
  EXPECT_THAT(find(z_image, "strength")->default_value, HasSubstr("inpainting 1"));
  EXPECT_EQ(find(z_image, "true_cfg_scale"), nullptr);
  const PipelineFamily* flux = find_pipeline_family_named("flux");
  EXPECT_NE(find(flux, "true_cfg_scale"), nullptr);
  EXPECT_THAT(find(flux, "guidance_scale")->default_value, HasSubstr("7.0"));
  EXPECT_NE(find(find_pipeline_family_named("qwen-image"), "mask_image"), nullptr);
  EXPECT_NE(find(find_pipeline_family_named("qwen-image"), "true_cfg_scale"), nullptr);
  EXPECT_EQ(find(find_pipeline_family_named("qwen-image"), "guidance_scale"), nullptr);
  // padding_mask_crop where the upstream inpainting pipeline has it: FLUX's
  // and Qwen-Image's, not Z-Image's.
  EXPECT_NE(find(flux, "padding_mask_crop"), nullptr);
  EXPECT_NE(find(find_pipeline_family_named("qwen-image"), "padding_mask_crop"), nullptr);
  EXPECT_EQ(find(z_image, "padding_mask_crop"), nullptr);
  for (const char* name : {"wan", "krea2"}) {
    EXPECT_EQ(find(find_pipeline_family_named(name), "image"), nullptr) << name;
  }
  for (const char* name : {"wan", "qwen-image", "krea2"}) {
    EXPECT_NE(find(find_pipeline_family_named(name), "num_images_per_prompt"), nullptr) << name;
  }
}

}  // namespace
}  // namespace diffusiond
