// Generate through a real Engine over the random-weight Anima pipeline
// folder the demo writes (Qwen3 with its tokenizer, the text conditioner
// with its T5 tokenizer, the Cosmos transformer, AutoencoderKLQwenImage;
// modular_model_index.json): a prompt becomes an image of the asked size,
// the text conditioner encoding after the text encoder, the prompt and the
// default negative each.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/engine/engine.h"
#include "core/memory/budget.h"
#include "core/pipeline/generate.h"
#include "core/pipeline/pipeline_folder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/engine_under_budget.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tools/random_models/anima_pipeline_random.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;
using Stage = GenerateEvent::Stage;

std::vector<std::string> ids_of(const std::vector<GenerateEvent>& events, Stage stage) {
  std::vector<std::string> ids;
  for (const GenerateEvent& e : events) {
    if (e.stage == stage) ids.push_back(e.model_id);
  }
  return ids;
}

TEST(AnimaGenerateTest, TheDemoFolderGeneratesThroughFourComponents) {
  testing::TempDir dir;
  const std::string models_dir = dir.path("models");
  ASSERT_THAT(write_random_anima_pipeline(demo_anima_pipeline_sizes(), models_dir + "/anima", 5), IsOk());
  absl::StatusOr<PipelineFolder> folder = open_pipeline_folder(models_dir, "anima");
  ASSERT_THAT(folder, IsOk());
  EXPECT_EQ(folder->family->name(), "anima");

  EngineOptions o;
  o.models_dir = models_dir;
  std::unique_ptr<Budget> ram;
  std::unique_ptr<Engine> engine;
  ASSERT_THAT(::diffusiond::testing::start_engine(o, int64_t{1} << 32, &ram, &engine), IsOk());
  GenerateRequest r;
  r.pipeline = "anima";
  r.prompt = "a lighthouse at dawn";
  r.width = 64;
  r.height = 48;
  r.steps = 2;
  r.seed = 9;
  std::vector<GenerateEvent> events;
  GenerateOptions options;
  options.on_event = [&](const GenerateEvent& e) { events.push_back(e); };
  absl::StatusOr<GeneratedImage> image = generate(*engine, models_dir, r, options);
  ASSERT_THAT(image, IsOk());
  EXPECT_EQ(image->pixels.sizes().vec(), (std::vector<int64_t>{48, 64, 3}));
  EXPECT_EQ(ids_of(events, Stage::kLoad), (std::vector<std::string>{"anima/text_encoder", "anima/text_conditioner",
                                                                    "anima/transformer", "anima/vae"}));
  // One event per component; guidance 4.0 by default, so each also encodes
  // the empty negative.
  EXPECT_EQ(ids_of(events, Stage::kEncode), (std::vector<std::string>{"anima/text_encoder", "anima/text_conditioner"}));
  for (const GenerateEvent& e : events) {
    if (e.stage == Stage::kEncode) {
      EXPECT_THAT(e.detail, HasSubstr("negative tokens")) << e.model_id;
    }
  }
  EXPECT_EQ(ids_of(events, Stage::kDenoise).size(), 2u);
  EXPECT_EQ(ids_of(events, Stage::kDecode), (std::vector<std::string>{"anima/vae"}));
  EXPECT_THAT(image->parameters[0].second, HasSubstr("\"pipeline\":\"anima\""));
  EXPECT_THAT(image->parameters[0].second, HasSubstr("\"guidance_scale\":4.0"));
}

TEST(AnimaGenerateTest, SizesThatDoNotAgreeAreRefusedBeforeAnyWrite) {
  testing::TempDir dir;
  AnimaPipelineSizes sizes = demo_anima_pipeline_sizes();
  sizes.text_conditioner.source_dim = sizes.text_encoder.hidden_size / 2;
  EXPECT_THAT(write_random_anima_pipeline(sizes, dir.path("anima"), 5),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is not the text encoder's width")));
  sizes = demo_anima_pipeline_sizes();
  sizes.transformer.text_embed_dim = 128;
  EXPECT_THAT(write_random_anima_pipeline(sizes, dir.path("anima"), 5),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("text_embed_dim")));
  EXPECT_FALSE(std::filesystem::exists(dir.path("anima")));
}

}  // namespace
}  // namespace diffusiond
