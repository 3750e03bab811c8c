// Generate through a real Engine over random-weight Wan pipeline folders
// (UMT5 + tokenizer, the transformer, the causal VAE; Wan 2.2's second
// expert): videos frame by frame into a VideoSink, the refusals made before
// any load, the two experts as two segments with their own guidance, and a
// budget that holds one expert but not both, where the first is evicted for
// the second and nothing over-commits.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/engine/engine.h"
#include "core/memory/budget.h"
#include "core/pipeline/generate.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/engine_under_budget.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tools/random_models/wan_pipeline_random.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using Stage = GenerateEvent::Stage;

// Keeps every video's frames; check() answers `refuse` when it is set.
class KeptVideos final : public VideoSink {
 public:
  struct Video {
    VideoHeader header;
    std::vector<torch::Tensor> frames;
    bool finished = false;
  };
  absl::Status refuse = absl::OkStatus();
  std::vector<Video> videos;
  int checks = 0;

  absl::Status check(int64_t, int64_t, int) override {
    ++checks;
    return refuse;
  }
  absl::Status begin(const VideoHeader& header) override {
    videos.push_back({header, {}, false});
    return absl::OkStatus();
  }
  absl::Status add_frame(const torch::Tensor& rgb) override {
    videos.back().frames.push_back(rgb.clone());
    return absl::OkStatus();
  }
  absl::Status finish() override {
    videos.back().finished = true;
    return absl::OkStatus();
  }
};

int count(const std::vector<GenerateEvent>& events, Stage stage) {
  return static_cast<int>(std::count_if(events.begin(), events.end(), [&](const auto& e) { return e.stage == stage; }));
}

class WanGenerateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    models_dir_ = dir_.path("models");
    WanPipelineSizes sizes = demo_wan_pipeline_sizes();
    ASSERT_THAT(write_random_wan_pipeline(sizes, models_dir_ + "/wan21", 5), IsOk());
    // Wider experts than the demo's, so that one expert and a step's
    // activations (with their fixed 8 MiB of slack) fit where two experts
    // do not.
    sizes.transformer.num_attention_heads = 4;
    sizes.transformer.attention_head_dim = 64;
    sizes.transformer.ffn_dim = 1024;
    sizes.transformer.num_layers = 4;
    sizes.boundary_ratio = 0.875;
    ASSERT_THAT(write_random_wan_pipeline(sizes, models_dir_ + "/wan22", 7), IsOk());
    start(int64_t{1} << 32);
  }

  void start(int64_t capacity) {
    EngineOptions o;
    o.models_dir = models_dir_;
    o.fp8 = Fp8Options{std::nullopt, Fp8Scaling::kNone};
    ASSERT_THAT(::diffusiond::testing::start_engine(o, capacity, &ram_, &engine_), IsOk());
  }

  static GenerateRequest request(const std::string& pipeline) {
    GenerateRequest r;
    r.pipeline = pipeline;
    r.prompt = "a lighthouse at dawn";
    r.width = 48;
    r.height = 32;
    r.num_frames = 5;
    r.steps = 4;
    r.seed = 11;
    return r;
  }

  absl::Status run(const GenerateRequest& r, KeptVideos* sink, std::vector<GenerateEvent>* events) {
    GenerateOptions options;
    options.video = sink;
    options.on_event = [&](const GenerateEvent& e) {
      if (events != nullptr) events->push_back(e);
      EXPECT_GE(ram_->available_bytes(), 0) << "over-committed";
    };
    return generate_images(*engine_, models_dir_, r, options).status();
  }

  testing::TempDir dir_;
  std::string models_dir_;
  std::unique_ptr<Budget> ram_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(WanGenerateTest, AVideoComesFrameByFrameIntoTheSink) {
  KeptVideos sink;
  std::vector<GenerateEvent> events;
  GenerateRequest r = request("wan21");
  r.num_images_per_prompt = 2;
  ASSERT_THAT(run(r, &sink, &events), IsOk());
  EXPECT_EQ(sink.checks, 1);
  ASSERT_EQ(sink.videos.size(), 2u);
  for (int k = 0; k < 2; ++k) {
    const KeptVideos::Video& v = sink.videos[k];
    EXPECT_TRUE(v.finished);
    EXPECT_EQ(v.header.index, k);
    EXPECT_EQ(v.header.seed, 11u);
    EXPECT_EQ(v.header.frames, 5);
    EXPECT_EQ(v.header.fps, 16);
    ASSERT_EQ(v.frames.size(), 5u);
    for (const torch::Tensor& f : v.frames) {
      EXPECT_EQ(f.sizes().vec(), (std::vector<int64_t>{32, 48, 3}));
      EXPECT_EQ(f.scalar_type(), torch::kUInt8);
    }
    ASSERT_EQ(v.header.parameters.size(), 1u);
    const nlohmann::json p = nlohmann::json::parse(v.header.parameters[0].second);
    EXPECT_EQ(p.at("num_frames"), 5);
    EXPECT_EQ(p.at("fps"), 16);
    EXPECT_EQ(p.at("guidance_scale"), 5.0) << "WanPipeline's default";
    EXPECT_FALSE(p.contains("guidance_scale_2")) << "one expert";
  }
  EXPECT_FALSE(torch::equal(sink.videos[0].frames[2], sink.videos[1].frames[2])) << "one generator, two draws";
  EXPECT_EQ(count(events, Stage::kDenoise), 8);
  EXPECT_EQ(count(events, Stage::kDecode), 2);
  EXPECT_EQ(count(events, Stage::kEncode), 1);
}

TEST_F(WanGenerateTest, BadRequestsAreRefusedBeforeAnyLoad) {
  const auto refused = [&](GenerateRequest r, absl::StatusCode code, const std::string& says, KeptVideos* sink) {
    std::vector<GenerateEvent> events;
    EXPECT_THAT(run(r, sink, &events), StatusIs(code, HasSubstr(says))) << says;
    EXPECT_TRUE(events.empty()) << says;
    EXPECT_TRUE(engine_->list().empty()) << says;
  };
  KeptVideos sink;
  GenerateRequest r = request("wan21");
  r.num_frames = 6;
  refused(r, absl::StatusCode::kInvalidArgument, "num_frames must be 1 + 4k", &sink);
  r = request("wan21");
  r.width = 40;
  refused(r, absl::StatusCode::kInvalidArgument, "multiples of 16", &sink);
  r = request("wan21");
  r.guidance_scale_2 = 3.0;
  refused(r, absl::StatusCode::kInvalidArgument, "guidance_scale_2: this wan pipeline has one denoiser", &sink);
  r = request("wan22");
  r.guidance_scale = 1.0;
  r.guidance_scale_2 = 3.0;
  refused(r, absl::StatusCode::kInvalidArgument, "guidance_scale_2 applies with classifier-free guidance", &sink);
  r = request("wan22");
  r.guidance_scale_2 = 0.5;
  refused(r, absl::StatusCode::kInvalidArgument, "guidance_scale_2 must be >= 1", &sink);
  r = request("wan21");
  r.sigmas = {1.0f, 0.5f};
  r.steps = 0;
  refused(r, absl::StatusCode::kInvalidArgument, "sigmas: the wan pipeline", &sink);
  r = request("wan21");
  r.image = torch::zeros({3, 32, 48});
  refused(r, absl::StatusCode::kInvalidArgument, "image: the wan pipeline takes no init image", &sink);
  r = request("wan21");
  r.component_options["transformer_2"] = ComponentOptions{};
  refused(r, absl::StatusCode::kInvalidArgument, "has no transformer_2", &sink);
  refused(request("wan21"), absl::StatusCode::kInvalidArgument, "makes videos", nullptr);
  sink.refuse = absl::FailedPreconditionError("no H.264 encoder");
  refused(request("wan21"), absl::StatusCode::kFailedPrecondition, "no H.264 encoder", &sink);
  EXPECT_TRUE(sink.videos.empty());
}

// The second expert runs the steps below the boundary (UniPC's timesteps
// 999, 900, 750, 500 at 4 steps and shift 3, boundary 875: the last two),
// with its own guidance.
TEST_F(WanGenerateTest, TwoExpertsRunAsSegmentsWithTheirOwnGuidance) {
  std::vector<GenerateEvent> events;
  KeptVideos same, other;
  GenerateRequest r = request("wan22");
  ASSERT_THAT(run(r, &same, &events), IsOk());
  std::vector<std::string> step_models;
  for (const GenerateEvent& e : events) {
    if (e.stage == Stage::kDenoise) step_models.push_back(e.model_id);
  }
  EXPECT_EQ(step_models, (std::vector<std::string>{"wan22/transformer", "wan22/transformer", "wan22/transformer_2",
                                                   "wan22/transformer_2"}));
  const nlohmann::json p = nlohmann::json::parse(same.videos.at(0).header.parameters.at(0).second);
  EXPECT_EQ(p.at("guidance_scale_2"), 5.0) << "guidance_scale's, as upstream's default";
  EXPECT_EQ(p.at("boundary_ratio").at("transformer_2"), 0.875);
  EXPECT_EQ(p.at("transformer_2"), "wan22/transformer_2");

  r.guidance_scale_2 = 2.0;
  ASSERT_THAT(run(r, &other, nullptr), IsOk());
  ASSERT_EQ(other.videos.size(), 1u);
  EXPECT_FALSE(torch::equal(same.videos[0].frames[4], other.videos[0].frames[4])) << "guidance_scale_2 unused";
}

TEST_F(WanGenerateTest, ABudgetForOneExpertEvictsTheFirstForTheSecond) {
  std::map<std::string, int64_t> bytes;
  for (const char* c : {"text_encoder", "transformer", "transformer_2", "vae"}) {
    absl::StatusOr<ModelInfo> info = engine_->load(ModelLoadRequest{std::string("wan22/") + c});
    ASSERT_THAT(info, IsOk()) << c;
    bytes[c] = info->bytes[kCpuIndex];
  }
  // A step's activations, as the denoise reserves them beside its expert.
  int64_t step = 0;
  {
    GenerateOptions options;
    KeptVideos sink;
    options.video = &sink;
    options.on_event = [&](const GenerateEvent& e) {
      if (e.stage == Stage::kDenoise) step = std::max(step, ram_->snapshot().reserved_bytes);
    };
    ASSERT_THAT(generate_images(*engine_, models_dir_, request("wan22"), options), IsOk());
  }
  ASSERT_GT(step, 0);
  const int64_t capacity = std::max(bytes["transformer"], bytes["transformer_2"]) + step + (int64_t{1} << 20);
  ASSERT_LT(capacity, bytes["transformer"] + bytes["transformer_2"]) << "the test's experts must not fit together";
  start(capacity);
  std::vector<GenerateEvent> events;
  KeptVideos sink;
  ASSERT_THAT(run(request("wan22"), &sink, &events), IsOk());
  ASSERT_EQ(sink.videos.size(), 1u);
  EXPECT_EQ(sink.videos[0].frames.size(), 5u);
  // encode -> expert 1 -> (evict) expert 2 -> decode.
  std::vector<std::string> order;
  for (const GenerateEvent& e : events) {
    if (e.stage == Stage::kLoad || e.stage == Stage::kEvict) {
      order.push_back(absl::StrCat(generate_stage_name(e.stage), " ", e.model_id));
    } else if (e.stage != Stage::kDenoise || e.step == 1 || order.back() != absl::StrCat("denoise ", e.model_id)) {
      order.push_back(absl::StrCat(generate_stage_name(e.stage), " ", e.model_id));
    }
  }
  const auto at = [&](const std::string& what) {
    return std::find(order.begin(), order.end(), what) - order.begin();
  };
  const std::string all = absl::StrJoin(order, "; ");
  EXPECT_LT(at("encode wan22/text_encoder"), at("load wan22/transformer")) << all;
  EXPECT_LT(at("load wan22/transformer"), at("denoise wan22/transformer")) << all;
  EXPECT_LT(at("denoise wan22/transformer"), at("evict wan22/transformer")) << all;
  EXPECT_LT(at("evict wan22/transformer"), at("load wan22/transformer_2")) << all;
  EXPECT_LT(at("load wan22/transformer_2"), at("denoise wan22/transformer_2")) << all;
  EXPECT_LT(at("denoise wan22/transformer_2"), at("decode wan22/vae")) << all;
  EXPECT_LT(at("decode wan22/vae"), static_cast<int64_t>(order.size())) << all;
  EXPECT_LE(ram_->snapshot().high_water_bytes, capacity);

  // A budget below one expert's weights: refused before anything loads.
  start(bytes["transformer_2"] - 1);
  events.clear();
  EXPECT_THAT(run(request("wan22"), &sink, &events),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("component transformer"), HasSubstr("could never run; nothing was loaded"))));
  EXPECT_TRUE(events.empty());
  EXPECT_TRUE(engine_->list().empty());
}

}  // namespace
}  // namespace diffusiond
