// EncodePrompt end to end through a real Engine for the two Qwen-VL
// families: a pipeline folder holding the reference fixture's text encoder
// and tokenizer (DIFFUSIOND_QWEN25VL_FIXTURE / DIFFUSIOND_QWEN3VL_FIXTURE,
// default the shared ones) gives upstream's pipeline prompt embeddings for
// a prompt — Qwen-Image's rows past the template's prefix, and Krea 2's
// stack of the layers its model_index.json selects.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/engine/engine.h"
#include "core/memory/budget.h"
#include "core/pipeline/prompt_encoding.h"
#include "gtest/gtest.h"
#include "tests/testing/engine_under_budget.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tensor_file.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::max_abs_diff;
using ::diffusiond::testing::read_json_file;

// What the fixture README bounds a float32 port by.
constexpr double kEncodePromptTolerance = 2e-5;

class QwenVlEncodePrompt : public ::testing::Test {
 protected:
  // Copies `fixture`'s encoder and tokenizer into the models directory as
  // pipeline folder `name`, with `index` as its model_index.json, and
  // starts the engine over it.
  void serve(const std::string& fixture, const std::string& name, const nlohmann::json& index) {
    namespace fs = std::filesystem;
    const fs::path folder = fs::path(dir_.path("models")) / name;
    fs::create_directories(folder / "text_encoder");
    for (const char* file : {"config.json", "model.safetensors"}) {
      fs::copy_file(fs::path(fixture) / file, folder / "text_encoder" / file);
    }
    fs::copy(fs::path(fixture) / "tokenizer", folder / "tokenizer", fs::copy_options::recursive);
    dir_.write("models/" + name + "/model_index.json", index.dump());
    EngineOptions o;
    o.models_dir = dir_.path("models");
    o.fp8.format.reset();  // float32 weights as the reference's, not the daemon's default FP8
    ASSERT_THAT(::diffusiond::testing::start_engine(o, int64_t{1} << 30, &ram_, &engine_), IsOk());
  }

  absl::StatusOr<EncodedPrompt> encode(const std::string& name, const std::string& prompt) {
    PromptRequest r;
    r.text_encoder = name + "/text_encoder";
    r.prompt = prompt;
    r.pipeline = name;
    return encode_prompt(*engine_, dir_.path("models"), r, {});
  }

  testing::TempDir dir_;
  std::unique_ptr<Budget> ram_;
  std::unique_ptr<Engine> engine_;
};

// Every prompt of the fixture's pipeline calls at the family's
// max_sequence_length (512): upstream's rows for it (its padding and mask
// are what a batch adds; each EncodePrompt is one prompt, with no mask).
TEST_F(QwenVlEncodePrompt, QwenImageGivesUpstreamsPromptEmbeds) {
  const std::string fixture = testing::fixture_folder("DIFFUSIOND_QWEN25VL_FIXTURE", "qwen25vl-tiny");
  ASSERT_NO_FATAL_FAILURE(serve(fixture, "qwen-image",
                                {{"_class_name", "QwenImagePipeline"},
                                 {"text_encoder", {"transformers", "Qwen2_5_VLForConditionalGeneration"}},
                                 {"tokenizer", {"transformers", "Qwen2Tokenizer"}}}));
  testing::TensorFile io(fixture + "/io.safetensors");
  double worst = 0;
  int compared = 0;
  const nlohmann::json tokens = read_json_file(fixture + "/tokens.json");  // outlives the loop
  for (const auto& [name, call] : tokens.at("pipeline").items()) {
    if (call.at("max_sequence_length") != nlohmann::json(512)) continue;
    const torch::Tensor embeds = io.get(name + ".prompt_embeds");
    const bool masked = !call.at("mask_is_none").get<bool>();
    const torch::Tensor mask = masked ? io.get(name + ".prompt_embeds_mask") : torch::Tensor();
    for (size_t i = 0; i < call.at("prompts").size(); ++i) {
      absl::StatusOr<EncodedPrompt> e = encode("qwen-image", call.at("prompts").at(i).get<std::string>());
      ASSERT_THAT(e, IsOk()) << name << " " << i;
      ASSERT_EQ(e->conditioning.tensors.size(), 1u) << "no mask: one prompt has no padding";
      const torch::Tensor& got = e->conditioning.tensors.at("encoder_hidden_states");
      const int64_t rows = masked ? mask[i].sum().item<int64_t>() : embeds.size(1);
      ASSERT_EQ(got.size(0), rows) << name << " " << i;
      worst = std::max(worst, max_abs_diff(got, embeds[i].narrow(0, 0, rows)));
      EXPECT_EQ(e->tokens, rows + 34) << name << " " << i;
      ++compared;
    }
  }
  std::printf("qwen-image EncodePrompt: %d prompts, max abs diff %.3g\n", compared, worst);
  EXPECT_GE(compared, 4);
  EXPECT_LT(worst, kEncodePromptTolerance);
}

// Every prompt of the fixture's pipeline calls that upstream did not cut
// (a cut one differs by design: the family keeps 512 rows, the fixture its
// own max_sequence_length): upstream's rows where its mask is set.
TEST_F(QwenVlEncodePrompt, Krea2GivesUpstreamsStackOfTheSelectedLayers) {
  const std::string fixture = testing::fixture_folder("DIFFUSIOND_QWEN3VL_FIXTURE", "qwen3vl-tiny");
  const nlohmann::json taps = read_json_file(fixture + "/variant.json").at("select_layers");
  ASSERT_NO_FATAL_FAILURE(serve(fixture, "krea",
                                {{"_class_name", "Krea2Pipeline"},
                                 {"text_encoder", {"transformers", "Qwen3VLModel"}},
                                 {"tokenizer", {"transformers", "Qwen2Tokenizer"}},
                                 {"text_encoder_select_layers", taps},
                                 {"is_distilled", false}}));
  testing::TensorFile io(fixture + "/io.safetensors");
  double worst = 0;
  int compared = 0;
  const nlohmann::json tokens = read_json_file(fixture + "/tokens.json");  // outlives the loop
  for (const auto& [name, call] : tokens.at("pipeline").items()) {
    const int64_t msl = call.at("max_sequence_length").get<int64_t>();
    const torch::Tensor embeds = io.get(name + ".prompt_embeds"), mask = io.get(name + ".prompt_embeds_mask");
    for (size_t i = 0; i < call.at("prompts").size(); ++i) {
      const int64_t rows = mask[i].sum().item<int64_t>();
      if (rows >= msl) continue;  // cut (or exactly full): upstream's suffix sits elsewhere
      absl::StatusOr<EncodedPrompt> e = encode("krea", call.at("prompts").at(i).get<std::string>());
      ASSERT_THAT(e, IsOk()) << name << " " << i;
      ASSERT_EQ(e->conditioning.tensors.size(), 1u);
      const torch::Tensor& got = e->conditioning.tensors.at("encoder_hidden_states");
      const torch::Tensor expected = embeds[i].index({mask[i].ne(0)});
      ASSERT_EQ(got.sizes(), expected.sizes()) << name << " " << i;
      EXPECT_EQ(got.size(1), static_cast<int64_t>(taps.size()));
      worst = std::max(worst, max_abs_diff(got, expected));
      ++compared;
    }
  }
  std::printf("krea2 EncodePrompt: %d prompts, %zu taps, max abs diff %.3g\n", compared, taps.size(), worst);
  EXPECT_GE(compared, 2);
  EXPECT_LT(worst, kEncodePromptTolerance);
}

}  // namespace
}  // namespace diffusiond
