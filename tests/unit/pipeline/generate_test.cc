// Generate through a real Engine over a random-weight Z-Image pipeline
// folder (Qwen3 encoder + tokenizer, transformer, VAE): the image, the
// events, and a budget that holds only two of the three components, where
// the encoder must be evicted to make room and nothing over-commits.
#include "core/pipeline/generate.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include "core/engine/engine.h"
#include "core/memory/budget.h"
#include "core/models/vae/vae_memory.h"
#include "core/pipeline/pipeline_family.h"
#include "core/pipeline/prompt_encoding.h"
#include "core/pipeline/z_image/z_image_pipeline.h"
#include "core/util/file_text.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/engine_under_budget.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tools/random_models/pipeline_random.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using Stage = GenerateEvent::Stage;

class GenerateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    models_dir_ = dir_.path("models");
    sizes_ = demo_pipeline_sizes();
    // A wider encoder and a deeper transformer than the demo's, so that
    // every stage's activations (each with its fixed 8 MiB of slack) are
    // less than the two components it does not use: a budget for two of
    // three then holds every stage, and never all three.
    sizes_.text_encoder.vocab_size = 65536;
    sizes_.transformer.n_layers *= 4;
    ASSERT_THAT(write_random_pipeline(sizes_, models_dir_ + "/pipe", 3), IsOk());
  }

  void start(int64_t capacity) {
    EngineOptions o;
    o.models_dir = models_dir_;
    ASSERT_THAT(::diffusiond::testing::start_engine(o, capacity, &ram_, &engine_), IsOk());
  }

  GenerateRequest request() const {
    GenerateRequest r;
    r.pipeline = "pipe";
    r.prompt = "a lighthouse at dawn, 灯塔";
    r.negative_prompt = "blurry";
    r.width = 64;
    r.height = 48;
    r.steps = 2;
    r.guidance_scale = 3.0;
    r.seed = 11;
    return r;
  }

  absl::StatusOr<GeneratedImage> run(std::vector<GenerateEvent>* events) {
    GenerateOptions options;
    options.on_event = [&](const GenerateEvent& e) {
      events->push_back(e);
      EXPECT_GE(ram_->available_bytes(), 0) << "over-committed";
    };
    return generate(*engine_, models_dir_, request(), options);
  }

  // Each component's held bytes, measured by loading it alone.
  std::map<std::string, int64_t> component_bytes() {
    start(int64_t{1} << 32);
    std::map<std::string, int64_t> bytes;
    for (const char* c : {"text_encoder", "transformer", "vae"}) {
      ModelLoadRequest r;
      r.path = std::string("pipe/") + c;
      absl::StatusOr<ModelInfo> info = engine_->load(r);
      EXPECT_THAT(info, IsOk());
      bytes[c] = info.ok() ? info->bytes[kCpuIndex] : 0;
    }
    return bytes;
  }

  // The bytes a Denoise step of request() holds reserved for its
  // activations, read off the budget while the steps run.
  int64_t denoise_activation_bytes() {
    start(int64_t{1} << 32);
    int64_t reserved = 0;
    GenerateOptions options;
    options.on_event = [&](const GenerateEvent& e) {
      if (e.stage == Stage::kDenoise) reserved = std::max(reserved, ram_->snapshot().reserved_bytes);
    };
    EXPECT_THAT(generate(*engine_, models_dir_, request(), options), IsOk());
    return reserved;
  }

  // The most the budget held reserved while the encoder encoded the
  // request's prompt: its high-water mark above the loaded encoder.
  int64_t encode_activation_bytes() {
    start(int64_t{1} << 32);
    EXPECT_THAT(ready_component(*engine_, ModelLoadRequest{"pipe/text_encoder"}, std::nullopt, {}), IsOk());
    const int64_t committed = ram_->snapshot().committed_bytes;
    ram_->reset_high_water();
    // Z-Image's encoding named: a test family may share Qwen3 (below).
    PromptRequest encode;
    encode.text_encoder = "pipe/text_encoder";
    encode.prompt = request().prompt;
    encode.pipeline = "z-image";
    EXPECT_THAT(encode_prompt(*engine_, models_dir_, encode, {}), IsOk());
    return ram_->snapshot().high_water_bytes - committed;
  }

  testing::TempDir dir_;
  std::string models_dir_;
  PipelineSizes sizes_;
  std::unique_ptr<Budget> ram_;
  std::unique_ptr<Engine> engine_;
};

int count(const std::vector<GenerateEvent>& events, Stage stage) {
  return static_cast<int>(std::count_if(events.begin(), events.end(), [&](const auto& e) { return e.stage == stage; }));
}

TEST_F(GenerateTest, PromptToPixelsThroughThreeCachedComponents) {
  start(int64_t{1} << 32);
  std::vector<GenerateEvent> events;
  absl::StatusOr<GeneratedImage> image = run(&events);
  ASSERT_THAT(image, IsOk());
  EXPECT_EQ(image->pixels.sizes().vec(), (std::vector<int64_t>{48, 64, 3}));
  EXPECT_EQ(image->pixels.scalar_type(), torch::kUInt8);
  EXPECT_EQ(image->seed, 11u);
  ASSERT_EQ(image->parameters.size(), 1u);
  EXPECT_THAT(image->parameters[0].second, HasSubstr("\"seed\":11"));
  EXPECT_THAT(image->parameters[0].second, HasSubstr("\\u706f\\u5854"));  // escaped: tEXt is Latin-1
  EXPECT_EQ(count(events, Stage::kLoad), 3);
  EXPECT_EQ(count(events, Stage::kEncode), 1);
  EXPECT_EQ(count(events, Stage::kDenoise), 2);
  EXPECT_EQ(count(events, Stage::kDecode), 1);
  EXPECT_EQ(count(events, Stage::kEvict), 0);
  EXPECT_EQ(events.front().model_id, "pipe/text_encoder");
  EXPECT_EQ(engine_->list().size(), 3u);

  // A second run finds them loaded and gives the same pixels (same seed).
  std::vector<GenerateEvent> again;
  absl::StatusOr<GeneratedImage> second = run(&again);
  ASSERT_THAT(second, IsOk());
  EXPECT_TRUE(torch::equal(second->pixels, image->pixels));
  EXPECT_EQ(again.front().detail, "already loaded");
}

TEST_F(GenerateTest, ABudgetForTwoOfThreeEvictsTheEncoder) {
  const std::map<std::string, int64_t> bytes = component_bytes();
  const int64_t te = bytes.at("text_encoder"), tr = bytes.at("transformer"), vae = bytes.at("vae");
  const GenerateRequest r = request();
  const int64_t decode = vae_decode_activation_bytes(sizes_.vae, 1, r.height / 8, r.width / 8, 4, std::nullopt);
  // The denoise holds its activations beside the transformer, the decode
  // its own beside the transformer and the VAE.
  const int64_t denoise = denoise_activation_bytes();
  ASSERT_GT(denoise, 0);
  const int64_t encode = encode_activation_bytes();
  ASSERT_GT(encode, 0);
  const int64_t capacity = std::max({te + tr, te + encode, tr + denoise, tr + vae + decode}) + 4096;
  ASSERT_LT(capacity, te + tr + vae) << "the test's sizes must not let all three fit";
  start(capacity);
  std::vector<GenerateEvent> events;
  absl::StatusOr<GeneratedImage> image = run(&events);
  ASSERT_THAT(image, IsOk());
  EXPECT_EQ(image->pixels.size(0), 48);
  bool encoder_evicted = false;
  for (const GenerateEvent& e : events) encoder_evicted |= e.stage == Stage::kEvict && e.model_id == "pipe/text_encoder";
  EXPECT_TRUE(encoder_evicted);
  EXPECT_GE(ram_->available_bytes(), 0);
}

TEST_F(GenerateTest, AComponentLargerThanTheBudgetIsRefusedBeforeAnyLoad) {
  const std::map<std::string, int64_t> bytes = component_bytes();
  start(bytes.at("transformer") - 1);
  std::vector<GenerateEvent> events;
  EXPECT_THAT(run(&events), StatusIs(absl::StatusCode::kResourceExhausted,
                                     AllOf(HasSubstr("(\"pipe/"), HasSubstr("of weights, more than the RAM budget"),
                                           HasSubstr("could never run; nothing was loaded"))));
  EXPECT_TRUE(events.empty()) << "the encoder ran before the refusal";
  EXPECT_TRUE(engine_->list().empty());
}

TEST_F(GenerateTest, AnImageThatCouldNeverFitIsRefusedBeforeAnyLoad) {
  const std::map<std::string, int64_t> bytes = component_bytes();
  // Room for every component and a small image's calls (about 20 MiB at
  // 64x48), never for a large image's.
  start(bytes.at("text_encoder") + bytes.at("transformer") + bytes.at("vae") + (int64_t{64} << 20));
  for (int64_t side : {int64_t{0}, kGenerateMaxSide}) {  // 0: the pipeline's default, 1024
    GenerateRequest r = request();
    r.width = r.height = side;
    std::vector<GenerateEvent> events;
    GenerateOptions options;
    options.on_event = [&](const GenerateEvent& e) { events.push_back(e); };
    EXPECT_THAT(generate(*engine_, models_dir_, r, options),
                StatusIs(absl::StatusCode::kResourceExhausted,
                         AllOf(HasSubstr("(\"pipe/"), HasSubstr(" of weights and at least "),
                               HasSubstr(side == 0 ? "1024x1024 pixels" : "4096x4096 pixels"),
                               HasSubstr("could never run; nothing was loaded"))))
        << side;
    EXPECT_TRUE(events.empty()) << "a stage ran before the refusal";
    EXPECT_TRUE(engine_->list().empty());
  }
  std::vector<GenerateEvent> events;
  EXPECT_THAT(run(&events), IsOk()) << "the same budget holds a small image";
}

TEST_F(GenerateTest, EachStagesLeastCallIsALowerBoundOfWhatItReserves) {
  const int64_t denoise = denoise_activation_bytes();
  const int64_t encode = encode_activation_bytes();
  start(int64_t{1} << 32);
  ModelLoadRequest transformer, vae;
  transformer.path = "pipe/transformer";
  vae.path = "pipe/vae";
  absl::StatusOr<ModelInfo> denoiser = engine_->inspect(transformer), decoder = engine_->inspect(vae);
  ASSERT_THAT(denoiser, IsOk());
  ASSERT_THAT(decoder, IsOk());
  const int64_t f = decoder->geometry.spatial_factor;
  ASSERT_GT(f, 0);
  ActivationQuery step;
  step.latent_shape = {denoiser->geometry.channels, request().height / f, request().width / f};
  step.batch = 2;
  step.text_tokens = 1;
  step.denoise_loop = true;
  ActivationQuery text;
  text.text_tokens = static_cast<int64_t>(request().prompt.size());
  const std::vector<std::pair<std::string, ActivationQuery>> calls = {{"pipe/transformer", step},
                                                                      {"pipe/text_encoder", text}};
  std::map<std::string, CallFloor> before_load;
  for (const auto& [path, query] : calls) {
    absl::StatusOr<CallFloor> least = engine_->least_call_room(ModelLoadRequest{path}, query);
    ASSERT_THAT(least, IsOk()) << path;
    EXPECT_GT(least->call, 0) << path;
    before_load[path] = *least;
  }
  EXPECT_LE(before_load["pipe/transformer"].call, denoise);
  EXPECT_LE(before_load["pipe/text_encoder"].call, encode);
  EXPECT_TRUE(engine_->list().empty()) << "sizing a call loads nothing";
  for (const auto& [path, query] : calls) {
    ModelLoadRequest load;
    load.path = path;
    absl::StatusOr<ModelInfo> info = engine_->load(load);
    ASSERT_THAT(info, IsOk()) << path;
    absl::StatusOr<CallFloor> loaded = engine_->least_call_room(ModelLoadRequest{path}, query);
    ASSERT_THAT(loaded, IsOk()) << path;
    EXPECT_EQ(loaded->call, before_load[path].call) << path << ": loaded, the same config answers the same";
    EXPECT_EQ(loaded->weights, info->bytes[kCpuIndex]) << path;
    EXPECT_EQ(before_load[path].weights, info->bytes[kCpuIndex]) << path << ": the plan knew what the load holds";
  }
  EXPECT_FALSE(engine_->least_call_room(ModelLoadRequest{"pipe/absent"}, text).ok());
}

TEST_F(GenerateTest, BadRequestsAreRefusedBeforeAnyLoad) {
  start(int64_t{1} << 32);
  GenerateRequest r = request();
  r.width = 50;
  EXPECT_THAT(generate(*engine_, models_dir_, r), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("multiples of 16")));
  r = request();
  r.steps = -1;
  EXPECT_THAT(generate(*engine_, models_dir_, r), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("steps")));
  r.steps = 1000000;
  EXPECT_THAT(generate(*engine_, models_dir_, r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("steps must be 1 to 1000")));
  r = request();
  r.prompt.assign(kGenerateMaxPromptBytes + 1, 'x');
  EXPECT_THAT(generate(*engine_, models_dir_, r), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("prompt")));
  r = request();
  r.components["text_encoder_2"] = "pipe/text_encoder";
  EXPECT_THAT(generate(*engine_, models_dir_, r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no component \"text_encoder_2\"")));
  r = request();
  r.components["vae"] = "pipe/transformer";  // a denoiser in the decoder's role
  EXPECT_THAT(generate(*engine_, models_dir_, r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is not an image decoder")));
  r = request();
  r.guidance_scale = std::nan("");
  EXPECT_THAT(generate(*engine_, models_dir_, r), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("finite")));
  r = request();
  r.shift = std::numeric_limits<double>::infinity();
  EXPECT_THAT(generate(*engine_, models_dir_, r), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("finite")));
  r = request();
  r.pipeline = "pipe/vae";
  EXPECT_THAT(generate(*engine_, models_dir_, r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no model_index.json")));
  r = request();
  r.pipeline.clear();
  EXPECT_THAT(generate(*engine_, models_dir_, r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("every component")));
  r = request();
  r.pipeline = "../elsewhere";
  EXPECT_FALSE(generate(*engine_, models_dir_, r).ok());
  // A negative prompt with guidance off would be dropped: refused instead,
  // whether off is upstream's 0 or the former convention's 1.
  r = request();
  r.guidance_scale = 0.0;
  EXPECT_THAT(generate(*engine_, models_dir_, r),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("negative_prompt is used only with classifier-free guidance")));
  r = request();
  r.guidance_scale.reset();
  r.legacy_guidance_scale = 1.0;
  EXPECT_THAT(generate(*engine_, models_dir_, r),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("negative_prompt is used only with classifier-free guidance")));
  r = request();
  r.guidance_scale = 3.0;
  r.legacy_guidance_scale = 4.0;
  EXPECT_THAT(generate(*engine_, models_dir_, r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not both")));
  // Image inputs: each bad one names its field.
  const torch::Tensor image = torch::rand({3, 48, 64});  // the request's size
  r = request();
  r.image = image;
  r.width = 32;
  EXPECT_THAT(generate(*engine_, models_dir_, r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("does not resize")));
  r = request();
  r.image = image;
  r.mask_image = torch::ones({48, 16});
  EXPECT_THAT(generate(*engine_, models_dir_, r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("mask_image is 16x48")));
  r = request();
  r.mask_image = torch::ones({48, 64});
  EXPECT_THAT(generate(*engine_, models_dir_, r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("mask_image needs")));
  for (double strength : {-0.1, 1.5}) {
    r = request();
    r.image = image;
    r.strength = strength;
    EXPECT_THAT(generate(*engine_, models_dir_, r), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("strength")))
        << strength;
  }
  r = request();
  r.strength = 0.5;
  EXPECT_THAT(generate(*engine_, models_dir_, r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("strength is used only with an init image")));
  r = request();
  r.image = image * 2;
  EXPECT_THAT(generate(*engine_, models_dir_, r), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("[0, 1]")));
  r = request();
  r.num_images_per_prompt = kGenerateMaxImages + 1;
  EXPECT_THAT(generate_images(*engine_, models_dir_, r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("num_images_per_prompt")));
  r = request();
  r.num_images_per_prompt = 2;
  r.seeds = {1, 2, 3};
  EXPECT_THAT(generate_images(*engine_, models_dir_, r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("seeds gives one seed per image")));
  // Z-Image's classifier-free guidance is guidance_scale: FLUX's knob is
  // refused, not ignored.
  r = request();
  r.true_cfg_scale = 4.0;
  EXPECT_THAT(generate(*engine_, models_dir_, r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("takes no true_cfg_scale")));
  EXPECT_TRUE(engine_->list().empty());
}

TEST_F(GenerateTest, CancelledBeforeItStartsLoadsNothing) {
  start(int64_t{1} << 32);
  CancellationSource cancelled;
  cancelled.cancel();
  GenerateOptions options;
  options.cancel = cancelled.token();
  EXPECT_THAT(generate(*engine_, models_dir_, request(), options), StatusIs(absl::StatusCode::kCancelled, HasSubstr("before encoding")));
  EXPECT_TRUE(engine_->list().empty());
}

TEST_F(GenerateTest, ComponentsCanBeNamedOneByOne) {
  start(int64_t{1} << 32);
  ModelLoadRequest load;
  load.path = "pipe/vae";
  load.model_id = "my-vae";
  ASSERT_THAT(engine_->load(load), IsOk());
  GenerateRequest r = request();
  r.pipeline.clear();
  r.components = {{"text_encoder", "pipe/text_encoder"}, {"transformer", "pipe/transformer"}, {"vae", "my-vae"}};
  std::vector<GenerateEvent> events;
  GenerateOptions options;
  options.on_event = [&](const GenerateEvent& e) { events.push_back(e); };
  ASSERT_THAT(generate(*engine_, models_dir_, r, options), IsOk());
  EXPECT_EQ(engine_->list().size(), 3u);  // the VAE was not loaded twice
}

// A handle carries how its model was loaded: a call on it after the model
// was evicted loads it again, under its id and options, and says so; a call
// by id alone finds nothing.
TEST_F(GenerateTest, ACallOnAReadiedHandleLoadsAnEvictedModelAgain) {
  start(int64_t{1} << 32);
  ModelLoadRequest load;
  load.path = "pipe/vae";
  load.model_id = "my-vae";
  load.fp8 = Fp8Options{std::nullopt, Fp8Scaling::kNone};
  ASSERT_THAT(engine_->load(load), IsOk());
  absl::StatusOr<ModelHandle> vae = engine_->ready(ModelLoadRequest{"my-vae"}, ModelRole::kVae);
  ASSERT_THAT(vae, IsOk());
  EXPECT_FALSE(vae->loaded());
  EXPECT_THAT(engine_->ready(ModelLoadRequest{"my-vae"}, ModelRole::kTextEncoder),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("not a text-encoder")));
  ASSERT_THAT(engine_->unload("my-vae", UnloadOptions{}), IsOk());

  const torch::Tensor latents = torch::zeros({vae->info().geometry.channels, 4, 6});
  EXPECT_THAT(engine_->decode_image(ModelHandle::by_id("my-vae"), latents),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("not loaded")));
  absl::StatusOr<CallResult<torch::Tensor>> decoded = engine_->decode_image(*vae, latents);
  ASSERT_THAT(decoded, IsOk());
  EXPECT_TRUE(decoded->report.reloaded);
  EXPECT_EQ(decoded->value.size(0), 4 * vae->info().geometry.spatial_factor);
  const std::vector<ModelInfo> listed = engine_->list();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].model_id, "my-vae");
  EXPECT_FALSE(listed[0].fp8.has_value()) << "loaded again with the options it was readied with";
}

// Per-request precision: a component's options are those it loads with,
// recorded in the image's parameters; a cached model loaded otherwise, or
// options for a component the family lacks, are refused before any load.
TEST_F(GenerateTest, ComponentOptionsSetHowAComponentLoads) {
  start(int64_t{1} << 32);
  GenerateRequest r = request();
  r.component_options["text_encoder"].fp8 = Fp8Options{std::nullopt, Fp8Scaling::kNone};
  r.component_options["transformer"].compute_dtype = ComputeDtype::kFloat32;
  absl::StatusOr<GeneratedImage> image = generate(*engine_, models_dir_, r);
  ASSERT_THAT(image, IsOk());
  std::map<std::string, ModelInfo> loaded;
  for (ModelInfo& m : engine_->list()) loaded[m.model_id] = std::move(m);
  ASSERT_EQ(loaded.count("pipe/text_encoder"), 1u);
  EXPECT_FALSE(loaded["pipe/text_encoder"].fp8.has_value()) << "FP8 off, as asked";
  EXPECT_TRUE(loaded["pipe/transformer"].fp8.has_value()) << "the engine's default FP8";
  EXPECT_THAT(image->parameters[0].second,
              HasSubstr("\"component_options\":{\"text_encoder\":{\"fp8\":\"off\"},"
                        "\"transformer\":{\"compute_dtype\":\"float32\"}}"));

  engine_->unload("pipe/vae", UnloadOptions{}).IgnoreError();
  r.component_options["text_encoder"].fp8 = Fp8Options{Fp8Format::kE4M3Fn, Fp8Scaling::kNone};
  EXPECT_THAT(generate(*engine_, models_dir_, r),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("\"pipe/text_encoder\" is already loaded with FP8 off"),
                             HasSubstr("asked: e4m3fn"))));
  EXPECT_EQ(engine_->list().size(), 2u) << "refused before the VAE was loaded again";
  r = request();
  r.component_options["text_encoder_2"].fp8 = Fp8Options{std::nullopt, Fp8Scaling::kNone};
  EXPECT_THAT(generate(*engine_, models_dir_, r),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("component_options: the z-image pipeline has no component \"text_encoder_2\"")));
}

// A pipeline family of this test file alone: Z-Image's components, asked
// differently (the last hidden state, unpadded, no template). Registering
// it needs nothing from server/, clients/ or proto/.
class MadeUpPipeline final : public PipelineFamily {
 public:
  absl::string_view name() const override { return "made-up"; }
  std::vector<std::string> pipeline_classes() const override { return {"MadeUpPipeline"}; }
  std::vector<PipelineComponent> components() const override { return z_image_pipeline()->components(); }
  PipelineDefaults defaults(const ModelInfo&) const override {
    PipelineDefaults d;
    d.steps = 3;
    d.width = 32;
    d.height = 32;
    return d;
  }
  TextEncoding text_encoding(absl::string_view, const std::string& prompt) const override {
    TextEncoding e;
    e.text = prompt;
    e.hidden_layer = -1;
    return e;
  }
  absl::StatusOr<Conditioning> encoder_conditioning(absl::string_view, const EncodedText& encoded) const override {
    ++encodings;  // one per prompt encoded
    Conditioning c;
    c.tensors["cap_feats"] = encoded.hidden_states;
    return c;
  }
  mutable std::atomic<int> encodings{0};
};

TEST_F(GenerateTest, AFamilyRegisteredInATestRunsThroughTheGenericGenerate) {
  static MadeUpPipeline* const made_up = new MadeUpPipeline();
  static const absl::Status registered = register_pipeline_family(made_up);
  ASSERT_THAT(registered, IsOk());
  EXPECT_THAT(register_pipeline_family(made_up), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("already")));
  std::string index = read_text_file(models_dir_ + "/pipe/model_index.json").value();
  const size_t at = index.find("ZImagePipeline");
  ASSERT_NE(at, std::string::npos);
  index.replace(at, std::string("ZImagePipeline").size(), "MadeUpPipeline");
  std::filesystem::create_directories(models_dir_ + "/made-up");
  for (const char* c : {"text_encoder", "tokenizer", "transformer", "vae"}) {
    std::filesystem::create_directory_symlink(models_dir_ + "/pipe/" + c, models_dir_ + "/made-up/" + c);
  }
  {
    std::ofstream out(models_dir_ + "/made-up/model_index.json");
    out << index;
  }
  start(int64_t{1} << 32);
  GenerateRequest r;
  r.pipeline = "made-up";
  r.prompt = "a lighthouse";
  std::vector<GenerateEvent> events;
  GenerateOptions options;
  options.on_event = [&](const GenerateEvent& e) { events.push_back(e); };
  absl::StatusOr<GeneratedImage> image = generate(*engine_, models_dir_, r, options);
  ASSERT_THAT(image, IsOk());
  EXPECT_EQ(made_up->encodings.load(), 1);
  EXPECT_EQ(image->pixels.sizes().vec(), (std::vector<int64_t>{32, 32, 3}));  // its defaults
  EXPECT_EQ(count(events, Stage::kDenoise), 3);
  EXPECT_THAT(image->parameters[0].second, HasSubstr("\"pipeline\":\"made-up\""));
}

}  // namespace
}  // namespace diffusiond
