// Generate readies each component to a handle once (EngineApi::ready) and
// makes every call on that handle: an encoder that encodes a prompt and a
// negative one is readied once, and a model evicted between its readying
// and its call is loaded again by the engine's call, which the events say,
// not by Generate asking again. Through a FakeEngine, so that the calls
// Generate makes are what is counted.
#include <string>
#include <tuple>
#include <vector>

#include "core/pipeline/generate.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_engine.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Stage = GenerateEvent::Stage;

// An event as the test compares it: its stage, model and step.
using Seen = std::tuple<Stage, std::string, int>;

class GenerateHandlesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A loaded Z-Image pipeline of three components: a Qwen3 encoder, the
    // transformer and a VAE with 16 latent channels, 8x down.
    ModelInfo te, dit, vae;
    te.model_id = "te";
    te.architecture = "qwen3";
    te.role = ModelRole::kTextEncoder;
    dit.model_id = "dit";
    dit.architecture = "z-image";
    dit.geometry = {16, 0};
    vae.model_id = "vae";
    vae.architecture = "autoencoder-kl";
    vae.role = ModelRole::kVae;
    vae.geometry = {16, 8};
    engine_.models = {te, dit, vae};
    EncodedText encoded;
    encoded.hidden_states = torch::zeros({1, 4, 8});
    encoded.attention_mask = torch::ones({1, 4}, torch::kBool);
    encoded.tokens = 4;
    engine_.encode_result = encoded;
    engine_.denoise_status = absl::OkStatus();
    engine_.decode_status = absl::OkStatus();
  }

  GenerateRequest request(double guidance_scale, const std::string& negative) const {
    GenerateRequest r;
    r.components = {{"text_encoder", "te"}, {"transformer", "dit"}, {"vae", "vae"}};
    r.prompt = "a lighthouse at dawn";
    r.negative_prompt = negative;
    r.width = 64;
    r.height = 48;
    r.steps = 2;
    r.guidance_scale = guidance_scale;
    return r;
  }

  absl::StatusOr<GeneratedImage> run(const GenerateRequest& r) {
    GenerateOptions options;
    options.on_event = [&](const GenerateEvent& e) {
      seen_.emplace_back(e.stage, e.model_id, e.step);
      details_.push_back(e.detail);
    };
    return generate(engine_, dir_.path(), r, options);
  }

  testing::TempDir dir_;
  testing::FakeEngine engine_;
  std::vector<Seen> seen_;
  std::vector<std::string> details_;
};

TEST_F(GenerateHandlesTest, EachComponentIsReadiedOnceAndTheEventsAreThoseOfTheStages) {
  ASSERT_THAT(run(request(0, "")), IsOk());
  EXPECT_THAT(engine_.readied, ElementsAre("te", "dit", "vae"));
  EXPECT_EQ(engine_.encodes, 1);
  EXPECT_EQ(engine_.loads.load(), 0) << "every component was cached";
  EXPECT_THAT(seen_, ElementsAre(Seen{Stage::kLoad, "te", 0}, Seen{Stage::kEncode, "te", 0},
                                 Seen{Stage::kLoad, "dit", 0}, Seen{Stage::kDenoise, "dit", 1},
                                 Seen{Stage::kDenoise, "dit", 2}, Seen{Stage::kLoad, "vae", 0},
                                 Seen{Stage::kDecode, "vae", 0}));
  EXPECT_EQ(details_[0], "already loaded");
  EXPECT_EQ(engine_.denoise_request.model.id(), "dit");
  EXPECT_TRUE(engine_.denoise_request.model.readied()) << "the denoise got the readied handle, not a name";
}

TEST_F(GenerateHandlesTest, AGuidedGenerateEncodesTwiceOnOneHandle) {
  ASSERT_THAT(run(request(4.0, "blurry")), IsOk());
  EXPECT_EQ(engine_.encodes, 2);
  EXPECT_THAT(engine_.readied, ElementsAre("te", "dit", "vae"));
  EXPECT_TRUE(engine_.denoise_request.negative.has_value());
}

TEST_F(GenerateHandlesTest, AModelLoadedAgainByItsCallIsReportedNotReadiedAgain) {
  // The VAE was evicted between its readying and its decode: the engine's
  // call loaded it again, evicting the transformer.
  CallReport decode_report;
  decode_report.reloaded = true;
  decode_report.evicted = {"dit"};
  GenerateOptions options;
  options.on_event = [&](const GenerateEvent& e) {
    seen_.emplace_back(e.stage, e.model_id, e.step);
    details_.push_back(e.detail);
    // The next call after the VAE is readied is its decode.
    if (e.stage == Stage::kLoad && e.model_id == "vae") engine_.next_report = decode_report;
  };
  ASSERT_THAT(generate(engine_, dir_.path(), request(0, ""), options), IsOk());
  EXPECT_THAT(engine_.readied, ElementsAre("te", "dit", "vae"));
  ASSERT_GE(seen_.size(), 3u);
  const size_t n = seen_.size();
  EXPECT_EQ(seen_[n - 3], (Seen{Stage::kLoad, "vae", 0}));
  EXPECT_THAT(details_[n - 3], HasSubstr("loaded again for the decode of vae"));
  EXPECT_EQ(seen_[n - 2], (Seen{Stage::kEvict, "dit", 0}));
  EXPECT_EQ(seen_[n - 1], (Seen{Stage::kDecode, "vae", 0}));
}

// Anima: the text conditioner runs after the encoder, for the prompt and
// then the default negative "", each given the encoder's rows of that
// prompt times their mask; its output alone conditions the denoiser.
TEST_F(GenerateHandlesTest, AnimaConditionsEachPromptAfterTheEncoder) {
  ModelInfo te, cond, dit, vae;
  te.model_id = "te";
  te.architecture = "qwen3";
  te.role = ModelRole::kTextEncoder;
  cond.model_id = "cond";
  cond.architecture = "anima-conditioner";
  cond.role = ModelRole::kTextConditioner;
  dit.model_id = "dit";
  dit.architecture = "cosmos";
  dit.geometry = {16, 0};
  vae.model_id = "vae";
  vae.architecture = "autoencoder-kl-qwen-image";
  vae.role = ModelRole::kVae;
  vae.geometry = {16, 8};
  engine_.models = {te, cond, dit, vae};
  EncodedText encoded;
  encoded.hidden_states = torch::ones({3, 8});
  encoded.attention_mask = torch::tensor({true, true, false});
  encoded.tokens = 2;
  engine_.encode_result = encoded;
  ConditionedText conditioned;
  conditioned.hidden_states = torch::full({512, 32}, 0.5);
  conditioned.tokens = 3;
  engine_.condition_result = conditioned;
  GenerateRequest r;
  r.components = {{"text_encoder", "te"}, {"text_conditioner", "cond"}, {"transformer", "dit"}, {"vae", "vae"}};
  r.prompt = "a lighthouse at dawn";
  r.width = 64;
  r.height = 48;
  r.steps = 2;
  ASSERT_THAT(run(r), IsOk());
  EXPECT_THAT(engine_.readied, ElementsAre("te", "cond", "dit", "vae"));
  EXPECT_EQ(engine_.encodes, 2) << "guidance 4.0 by default: the negative is encoded";
  EXPECT_EQ(engine_.conditions, 2);
  EXPECT_EQ(engine_.condition_request.text, "") << "the default negative, conditioned last";
  EXPECT_EQ(engine_.condition_request.max_tokens, 512);
  EXPECT_TRUE(torch::equal(engine_.condition_request.source_hidden_states[2], torch::zeros({8})))
      << "the masked row is zeroed";
  EXPECT_TRUE(torch::equal(engine_.condition_request.source_hidden_states[0], torch::ones({8})));
  EXPECT_EQ(engine_.denoise_request.guidance_scale, 4.0);
  ASSERT_TRUE(engine_.denoise_request.negative.has_value());
  EXPECT_EQ(engine_.denoise_request.positive.tensors.size(), 1u);
  EXPECT_TRUE(torch::equal(engine_.denoise_request.positive.tensors.at("encoder_hidden_states"),
                           conditioned.hidden_states));
  EXPECT_THAT(seen_, ::testing::Contains(Seen{Stage::kEncode, "cond", 0}));
}

}  // namespace
}  // namespace diffusiond
