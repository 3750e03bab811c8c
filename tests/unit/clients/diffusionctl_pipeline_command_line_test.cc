// The command line of generate, encode and decode: their options, the usage
// errors refused before any call, and their help.
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_split.h"
#include "clients/diffusionctl/command_line.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond::ctl {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;

template <typename T>
T options(const std::vector<std::string>& args) {
  absl::StatusOr<Invocation> inv = parse_command_line(args, nullptr);
  EXPECT_THAT(inv, IsOk());
  if (!inv.ok() || !std::holds_alternative<T>(inv->command)) {
    ADD_FAILURE() << "not the expected command";
    return T{};
  }
  return std::get<T>(inv->command);
}

void expect_usage_error(const std::vector<std::string>& args, const std::string& message) {
  EXPECT_THAT(parse_command_line(args, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)));
}

TEST(PipelineCommandLine, GenerateTakesEveryFlag) {
  const GenerateOptions o = options<GenerateOptions>({"generate",
                                                      "z-image-turbo",
                                                      "--prompt",
                                                      "a cat",
                                                      "--negative",
                                                      "blurry",
                                                      "--width",
                                                      "768",
                                                      "--height=512",
                                                      "--steps",
                                                      "9",
                                                      "--guidance",
                                                      "4.5",
                                                      "--seed",
                                                      "18446744073709551615",
                                                      "--shift",
                                                      "3",
                                                      "--vae",
                                                      "my-vae",
                                                      "--out",
                                                      "cat.png"});
  EXPECT_EQ(o.pipeline, "z-image-turbo");
  EXPECT_EQ(o.prompt, "a cat");
  EXPECT_EQ(o.negative_prompt, "blurry");
  EXPECT_EQ(o.width, 768);
  EXPECT_EQ(o.height, 512);
  EXPECT_EQ(o.steps, 9);
  EXPECT_EQ(o.guidance_scale, 4.5);
  EXPECT_EQ(o.seed, uint64_t{18446744073709551615u});
  EXPECT_EQ(o.shift, 3.0);
  EXPECT_EQ(o.components, (std::map<std::string, std::string>{{"vae", "my-vae"}}));
  EXPECT_EQ(o.out_path, "cat.png");
}

TEST(PipelineCommandLine, GenerateDefaultsLeaveTheChoiceToTheDaemon) {
  const GenerateOptions o =
      options<GenerateOptions>({"generate", "p", "--prompt", "x", "--out", "o.png"});
  EXPECT_EQ(o.width, 0);
  EXPECT_EQ(o.height, 0);
  EXPECT_EQ(o.steps, 0);
  EXPECT_FALSE(o.guidance_scale.has_value());
  EXPECT_EQ(o.shift, 0.0);
  EXPECT_EQ(o.image_path, "");
  EXPECT_EQ(o.num_images, 0);
  EXPECT_TRUE(o.seeds.empty());
  EXPECT_FALSE(o.seed.has_value());
  EXPECT_EQ(o.negative_prompt, "");
}

TEST(PipelineCommandLine, GenerateWithoutAPipelineNeedsEveryComponent) {
  const GenerateOptions o =
      options<GenerateOptions>({"generate", "-", "--prompt", "x", "--text_encoder", "te",
                                "--transformer", "dit", "--vae", "v", "--out", "o.png"});
  EXPECT_EQ(o.pipeline, "");
  EXPECT_EQ(o.components,
            (std::map<std::string, std::string>{{"text_encoder", "te"}, {"transformer", "dit"}, {"vae", "v"}}));
  expect_usage_error({"generate", "-", "--prompt", "x", "--vae", "v", "--out", "o"},
                     "generate - (no pipeline) needs every component, at least --transformer "
                     "(or --component transformer=ID)");
}

TEST(PipelineCommandLine, GenerateTakesAnyComponentByName) {
  const GenerateOptions o = options<GenerateOptions>(
      {"generate", "flux", "--prompt", "x", "--component", "text_encoder_2=t5", "--component",
       "vae=ae", "--text_encoder", "clip", "--out", "o.png"});
  EXPECT_EQ(o.components, (std::map<std::string, std::string>{
                              {"text_encoder", "clip"}, {"text_encoder_2", "t5"}, {"vae", "ae"}}));
  expect_usage_error({"generate", "p", "--prompt", "x", "--component", "noequals", "--out", "o"},
                     "--component: 'noequals' is not NAME=ID");
  expect_usage_error({"generate", "p", "--prompt", "x", "--component", "vae=a", "--component", "vae=b",
                      "--out", "o"},
                     "component vae is given twice");
}

TEST(PipelineCommandLine, GenerateRefusesBadValues) {
  const std::vector<std::string> base = {"generate", "p", "--prompt", "x", "--out", "o.png"};
  auto with = [&base](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  expect_usage_error({"generate", "p", "--out", "o"}, "generate needs --prompt TEXT");
  expect_usage_error({"generate", "p", "--prompt", "x"}, "generate needs --out FILE.png");
  expect_usage_error(with({"--width", "1000"}), "--width: '1000' is not a positive multiple of 16");
  expect_usage_error(with({"--height", "0"}), "--height: '0' is not a positive multiple of 16");
  expect_usage_error(with({"--width", "abc"}), "--width: 'abc'");
  expect_usage_error(with({"--steps", "0"}), "--steps: '0' is not an integer from 1 to 10000");
  expect_usage_error(with({"--guidance", "inf"}), "--guidance: 'inf' is not a number");
  expect_usage_error(with({"--shift", "-1"}), "--shift: '-1' is not a number >= 0");
  expect_usage_error(with({"--seed", "-1"}), "--seed: '-1' is not an integer from 0 to 2^64-1");
  expect_usage_error({"generate", "--prompt", "x", "--out", "o"},
                     "generate takes PIPELINE, got 0 arguments");
}

TEST(PipelineCommandLine, GenerateTakesAVideosFramesGuidanceAndFormat) {
  const GenerateOptions o =
      options<GenerateOptions>({"generate", "wan", "--prompt", "a wave", "--num_frames", "33", "--guidance_2", "3",
                                "--video_format", "png_frames", "--out", "wave"});
  EXPECT_EQ(o.num_frames, 33);
  EXPECT_EQ(o.guidance_scale_2, 3.0);
  EXPECT_EQ(o.video_format, v1::VIDEO_FORMAT_PNG_FRAMES);
  const GenerateOptions d = options<GenerateOptions>({"generate", "wan", "--prompt", "x", "--out", "o"});
  EXPECT_EQ(d.num_frames, 0);
  EXPECT_FALSE(d.guidance_scale_2.has_value());
  EXPECT_EQ(d.video_format, v1::VIDEO_FORMAT_MP4);
  const std::vector<std::string> base = {"generate", "wan", "--prompt", "x", "--out", "o"};
  for (const auto& [flag, value, says] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"--num_frames", "0", "--num_frames: '0' is not an integer from 1 to 1025"},
           {"--guidance_2", "0.5", "--guidance_2: '0.5' is not a number >= 1"},
           {"--video_format", "gif", "--video_format: 'gif' is not mp4 or png_frames"}}) {
    std::vector<std::string> args = base;
    args.push_back(flag);
    args.push_back(value);
    expect_usage_error(args, says);
  }
}

TEST(PipelineCommandLine, GenerateTakesPaddingMaskCropWithAMask) {
  const GenerateOptions o = options<GenerateOptions>({"generate", "flux", "--prompt", "a cat", "--image", "in.png",
                                                      "--mask", "m.png", "--padding_mask_crop", "0", "--out", "o.png"});
  EXPECT_EQ(o.padding_mask_crop, 0);  // 0 is a crop to the mask's box, as upstream's
  EXPECT_FALSE(options<GenerateOptions>({"generate", "flux", "--prompt", "x", "--image", "in.png", "--mask", "m.png",
                                         "--out", "o.png"})
                   .padding_mask_crop.has_value());
  expect_usage_error({"generate", "flux", "--prompt", "x", "--image", "in.png", "--padding_mask_crop", "8", "--out", "o"},
                     "--padding_mask_crop needs the --mask it crops around");
  expect_usage_error({"generate", "flux", "--prompt", "x", "--image", "in.png", "--mask", "m.png",
                      "--padding_mask_crop", "-1", "--out", "o"},
                     "--padding_mask_crop: '-1' is not an integer from 0 to 4096");
}

// --lora PATH[:WEIGHT], repeatable, on generate, denoise and step: the
// weight after the last colon when it is a number (a path may hold colons).
TEST(PipelineCommandLine, LoraFlagsGiveEachAdapterAndItsWeight) {
  const GenerateOptions g = options<GenerateOptions>({"generate", "flux", "--prompt", "x", "--lora",
                                                      "loras/a.safetensors:0.7", "--lora", "b.safetensors", "--lora",
                                                      "c:d.safetensors:-0.3", "--out", "o.png"});
  ASSERT_EQ(g.loras.size(), 3u);
  EXPECT_EQ(g.loras[0].path, "loras/a.safetensors");
  EXPECT_EQ(g.loras[0].weight, 0.7);
  EXPECT_EQ(g.loras[1].path, "b.safetensors");
  EXPECT_EQ(g.loras[1].weight, 1.0);
  EXPECT_EQ(g.loras[2].path, "c:d.safetensors");
  EXPECT_EQ(g.loras[2].weight, -0.3);
  const DenoiseOptions d = options<DenoiseOptions>(
      {"denoise", "flux", "--shape", "16,8,8", "--lora", "a.safetensors:0.5", "--out", "l.safetensors"});
  ASSERT_EQ(d.loras.size(), 1u);
  EXPECT_EQ(d.loras[0].weight, 0.5);
  const StepOptions s =
      options<StepOptions>({"step", "flux", "--in", "i.safetensors", "--lora", "a.safetensors", "--out", "o"});
  ASSERT_EQ(s.loras.size(), 1u);
  EXPECT_EQ(s.loras[0].path, "a.safetensors");
  expect_usage_error({"generate", "flux", "--prompt", "x", "--lora", ":0.5", "--out", "o"},
                     "--lora: ':0.5' is not PATH[:WEIGHT]");
}

TEST(PipelineCommandLine, GenerateTakesTrueCfgAndEachComponentsLoadOptions) {
  const GenerateOptions o =
      options<GenerateOptions>({"generate", "flux", "--prompt", "a cat", "--negative", "blurry", "--true_cfg", "3",
                                "--component_fp8", "text_encoder=off", "--component_fp8", "text_encoder_2=off",
                                "--component_dtype", "transformer=bfloat16", "--out", "cat.png"});
  EXPECT_EQ(o.true_cfg_scale, 3.0);
  ASSERT_EQ(o.component_options.size(), 3u);
  EXPECT_EQ(o.component_options.at("text_encoder").fp8, v1::FP8_MODE_OFF);
  EXPECT_EQ(o.component_options.at("text_encoder_2").fp8, v1::FP8_MODE_OFF);
  EXPECT_EQ(o.component_options.at("transformer").fp8, v1::FP8_MODE_DEFAULT);
  EXPECT_EQ(o.component_options.at("transformer").compute_dtype, "bfloat16");
  const std::vector<std::string> base = {"generate", "p", "--prompt", "x", "--out", "o.png"};
  std::vector<std::string> args = base;
  args.insert(args.end(), {"--component_fp8", "text_encoder=fp4"});
  expect_usage_error(args, "--component_fp8: 'fp4' is not one of default, off, e4m3fn, e5m2");
  args = base;
  args.insert(args.end(), {"--component_dtype", "vae"});
  expect_usage_error(args, "--component_dtype: 'vae' is not NAME=VALUE");
  args = base;
  args.insert(args.end(), {"--true_cfg", "-2"});
  expect_usage_error(args, "--true_cfg: '-2' is not a number >= 0");
}

TEST(PipelineCommandLine, EncodeAndDecodeNeedTheirFiles) {
  const EncodeOptions e =
      options<EncodeOptions>({"encode", "qwen", "--prompt", "a cat", "--out", "cap.safetensors"});
  EXPECT_EQ(e.text_encoder, "qwen");
  EXPECT_EQ(e.prompt, "a cat");
  EXPECT_EQ(e.out_path, "cap.safetensors");
  EXPECT_EQ(e.pipeline, "");
  EXPECT_EQ(options<EncodeOptions>({"encode", "umt5", "--prompt", "a cat", "--pipeline", "wan", "--out", "c"}).pipeline,
            "wan");
  expect_usage_error({"encode", "qwen", "--out", "c"}, "encode needs --prompt TEXT");
  expect_usage_error({"encode", "qwen", "--prompt", "x"}, "encode needs --out FILE.safetensors");

  const DecodeOptions d =
      options<DecodeOptions>({"decode", "vae", "--latents", "l.safetensors", "--out", "i.png"});
  EXPECT_EQ(d.vae, "vae");
  EXPECT_EQ(d.latents_path, "l.safetensors");
  EXPECT_EQ(d.out_path, "i.png");
  expect_usage_error({"decode", "vae", "--out", "i.png"},
                     "decode needs --latents FILE.safetensors");
  expect_usage_error({"decode", "vae", "--latents", "l"}, "decode needs --out FILE.png");
}

TEST(PipelineCommandLine, HelpListsTheCommandsWithinEightyColumns) {
  const std::string help = help_text("");
  for (const char* word : {"generate PIPELINE", "encode TEXT_ENCODER", "decode VAE",
                           "--prompt TEXT", "--negative TEXT", "--width N", "--height N",
                           "--text_encoder ID", "--transformer ID", "--vae ID", "--component NAME=ID",
                           "--pipeline NAME"}) {
    EXPECT_THAT(help, HasSubstr(word));
  }
  for (const char* command : {"generate", "encode", "decode"}) {
    for (absl::string_view line : absl::StrSplit(help_text(command), '\n')) {
      EXPECT_LE(line.size(), 80u) << line;
    }
  }
  for (absl::string_view line : absl::StrSplit(help, '\n')) EXPECT_LE(line.size(), 80u) << line;
}

}  // namespace
}  // namespace diffusiond::ctl
