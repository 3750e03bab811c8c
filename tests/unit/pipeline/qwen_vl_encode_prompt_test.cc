// EncodePrompt end to end through a real Engine for the two Qwen-VL
// families: a pipeline folder holding the reference fixture's text encoder
// and tokenizer (DIFFUSIOND_QWEN25VL_FIXTURE / DIFFUSIOND_QWEN3VL_FIXTURE,
// default the shared ones) gives upstream's pipeline prompt embeddings for
// a prompt — Qwen-Image's rows past the template's prefix, and Krea 2's
// stack of the layers its model_index.json selects.
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
constexpr double kTolerance = 2e-5;

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

TEST_F(QwenVlEncodePrompt, QwenImageGivesUpstreamsPromptEmbeds) {
  const std::string fixture = testing::fixture_folder("DIFFUSIOND_QWEN25VL_FIXTURE", "qwen25vl-tiny");
  ASSERT_NO_FATAL_FAILURE(serve(fixture, "qwen-image", {{"_class_name", "QwenImagePipeline"},
                                                         {"text_encoder", {"transformers", "Qwen2_5_VLForConditionalGeneration"}},
                                                         {"tokenizer", {"transformers", "Qwen2Tokenizer"}}}));
  const nlohmann::json single = read_json_file(fixture + "/tokens.json").at("pipeline").at("single");
  absl::StatusOr<EncodedPrompt> e = encode("qwen-image", single.at("prompts").at(0).get<std::string>());
  ASSERT_THAT(e, IsOk());
  const torch::Tensor expected = testing::TensorFile(fixture + "/io.safetensors").get("single.prompt_embeds")[0];
  ASSERT_EQ(e->conditioning.tensors.size(), 1u) << "no mask: upstream drops an all-ones one";
  const torch::Tensor& got = e->conditioning.tensors.at("encoder_hidden_states");
  ASSERT_EQ(got.sizes(), expected.sizes());
  const double diff = max_abs_diff(got, expected);
  std::printf("qwen-image EncodePrompt: %lld rows, max abs diff %.3g\n", static_cast<long long>(got.size(0)), diff);
  EXPECT_LT(diff, kTolerance);
  EXPECT_EQ(e->tokens, got.size(0) + 34);
}

TEST_F(QwenVlEncodePrompt, Krea2GivesUpstreamsStackOfTheSelectedLayers) {
  const std::string fixture = testing::fixture_folder("DIFFUSIOND_QWEN3VL_FIXTURE", "qwen3vl-tiny");
  const nlohmann::json taps = read_json_file(fixture + "/variant.json").at("select_layers");
  ASSERT_NO_FATAL_FAILURE(serve(fixture, "krea", {{"_class_name", "Krea2Pipeline"},
                                                  {"text_encoder", {"transformers", "Qwen3VLModel"}},
                                                  {"tokenizer", {"transformers", "Qwen2Tokenizer"}},
                                                  {"text_encoder_select_layers", taps},
                                                  {"is_distilled", false}}));
  const nlohmann::json single = read_json_file(fixture + "/tokens.json").at("pipeline").at("single");
  absl::StatusOr<EncodedPrompt> e = encode("krea", single.at("prompts").at(0).get<std::string>());
  ASSERT_THAT(e, IsOk());
  testing::TensorFile io(fixture + "/io.safetensors");
  // Upstream's rows where its mask is set: the prompt's and the suffix's.
  const torch::Tensor expected = io.get("single.prompt_embeds")[0].index({io.get("single.prompt_embeds_mask")[0].ne(0)});
  ASSERT_EQ(e->conditioning.tensors.size(), 1u);
  const torch::Tensor& got = e->conditioning.tensors.at("encoder_hidden_states");
  ASSERT_EQ(got.sizes(), expected.sizes());
  EXPECT_EQ(got.size(1), static_cast<int64_t>(taps.size()));
  const double diff = max_abs_diff(got, expected);
  std::printf("krea2 EncodePrompt: %lld rows x %lld taps, max abs diff %.3g\n", static_cast<long long>(got.size(0)),
              static_cast<long long>(got.size(1)), diff);
  EXPECT_LT(diff, kTolerance);
}

}  // namespace
}  // namespace diffusiond
