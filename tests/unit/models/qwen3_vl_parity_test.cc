// Parity of the Qwen3-VL text tower with upstream transformers'
// Qwen3VLModel and of Krea 2's recipe with diffusers'
// Krea2Pipeline.encode_prompt, on the reference fixture
// (DIFFUSIOND_QWEN3VL_FIXTURE, default the shared qwen3vl-tiny): every
// hidden state of every pipeline batch (padding in the middle, positions
// cumsum(mask) - 1), the stack of the selected layers through Step, the
// pipeline's stacked prompt embeddings from each prompt encoded alone
// through the recipe (prefix + prompt cut, suffix kept, prefix dropped),
// the layers past the deepest tap never run, and the RoPE tables; loaded
// from the fixture's file (Qwen3VLModel's names) and from two shards named
// as the hub's Qwen3VLForConditionalGeneration ("model.language_model.*").
//
// Tolerance: 2e-5 absolute, the fixture README's bound for a float32 port;
// its noise floor (the float64 run against the float32 one) is ~8e-6.
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/models/common/qwen_attention.h"
#include "core/models/qwen3_vl/qwen3_vl_model.h"
#include "core/pipeline/krea2/krea2_pipeline.h"
#include "core/pipeline/qwen_image/qwen_image_prompt.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/loaded_model.h"
#include "tests/testing/qwen_vl_fixture.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tensor_file.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::load_test_model;
using ::diffusiond::testing::masked_diff;
using ::diffusiond::testing::max_abs_diff;
using ::diffusiond::testing::TempDir;
using ::diffusiond::testing::TensorFile;

constexpr double kQwen3VlTolerance = 2e-5;

std::string qwen3vl_fixture() {
  return ::diffusiond::testing::fixture_folder("DIFFUSIOND_QWEN3VL_FIXTURE", "qwen3vl-tiny");
}

enum class Qwen3VlSource { kFixtureFile, kShardedHubNames };

class Qwen3VlParity : public ::testing::TestWithParam<Qwen3VlSource> {
 protected:
  void SetUp() override {
    std::function<std::string(const std::string&)> rename;
    if (GetParam() == Qwen3VlSource::kShardedHubNames) {
      rename = [](const std::string& name) { return "model." + name; };
    }
    const std::string te = ::diffusiond::testing::write_pipeline_layout(qwen3vl_fixture(), tmp_, rename);
    loaded_ = load_test_model(te, ModelLoadOptions());
    model_ = loaded_.get<Qwen3VlModel>();
    ASSERT_NE(model_, nullptr);
    ASSERT_NE(model_->tokenizer(), nullptr) << "the tokenizer beside text_encoder/";
  }

  TempDir tmp_;
  testing::LoadedModel loaded_;
  const Qwen3VlModel* model_ = nullptr;
  TensorFile io_{qwen3vl_fixture() + "/io.safetensors"};
  nlohmann::json tokens_ = ::diffusiond::testing::read_json_file(qwen3vl_fixture() + "/tokens.json");
  std::vector<int64_t> taps_ = ::diffusiond::testing::read_json_file(qwen3vl_fixture() + "/variant.json")
                                   .at("select_layers")
                                   .get<std::vector<int64_t>>();
};

TEST_P(Qwen3VlParity, EveryHiddenStateAndTheStackOfEveryBatch) {
  const int64_t layers = model_->config().num_hidden_layers;
  std::vector<int64_t> all;
  for (int64_t k = 0; k <= layers; ++k) all.push_back(k);
  int cases = 0;
  for (const auto& [name, call] : tokens_.at("pipeline").items()) {
    const torch::Tensor ids = io_.get(name + ".input_ids"), mask = io_.get(name + ".attention_mask");
    const torch::Tensor positions = io_.get(name + ".position_ids");
    absl::StatusOr<std::vector<torch::Tensor>> states = model_->hidden_state_list(ids, mask, positions, all);
    ASSERT_THAT(states, IsOk()) << name;
    double worst_valid = 0, worst_all = 0;
    for (int64_t k = 0; k <= layers; ++k) {
      const torch::Tensor expected = io_.get(absl::StrCat(name, ".hidden_states.", k));
      const double valid = masked_diff((*states)[k], expected, mask), every = max_abs_diff((*states)[k], expected);
      EXPECT_LT(valid, kQwen3VlTolerance) << name << " state " << k;
      EXPECT_LT(every, kQwen3VlTolerance) << name << " state " << k << ", padding rows included";
      worst_valid = std::max(worst_valid, valid);
      worst_all = std::max(worst_all, every);
    }
    std::printf("%s hidden_states[0..%lld]: max abs diff %.3g on tokens, %.3g with padding rows\n", name.c_str(),
                static_cast<long long>(layers), worst_valid, worst_all);
    // Step's stack of the pipeline's taps, [B, T, taps, hidden].
    absl::StatusOr<NamedTensors> step = model_->step({{"input_ids", ids},
                                                      {"attention_mask", mask},
                                                      {"position_ids", positions},
                                                      {"hidden_layers", torch::tensor(taps_, torch::kInt64)}});
    ASSERT_THAT(step, IsOk()) << name;
    const torch::Tensor& stack = step->at("hidden_states");
    ASSERT_EQ(stack.dim(), 4);
    ASSERT_EQ(stack.size(2), static_cast<int64_t>(taps_.size()));
    for (size_t t = 0; t < taps_.size(); ++t) {
      EXPECT_LT(max_abs_diff(stack.select(2, static_cast<int64_t>(t)),
                             io_.get(absl::StrCat(name, ".hidden_states.", taps_[t]))),
                kQwen3VlTolerance)
          << name << " tap " << taps_[t];
    }
    ++cases;
  }
  EXPECT_GE(cases, 4);
}

// Each prompt alone through the recipe, as EncodePrompt and Generate ask:
// upstream's rows where its mask is set (its padding, in the middle, is
// never attended and takes no position).
TEST_P(Qwen3VlParity, PipelinePromptEmbedsFromEachPromptAlone) {
  for (const auto& [name, call] : tokens_.at("pipeline").items()) {
    const std::vector<std::string> prompts = call.at("prompts").get<std::vector<std::string>>();
    const int64_t msl = call.at("max_sequence_length").get<int64_t>();
    const torch::Tensor embeds = io_.get(name + ".prompt_embeds"), mask = io_.get(name + ".prompt_embeds_mask");
    ASSERT_EQ(embeds.size(0), static_cast<int64_t>(prompts.size())) << name;
    for (size_t i = 0; i < prompts.size(); ++i) {
      const std::string what = absl::StrCat(name, " prompt ", i);
      absl::StatusOr<EncodedText> encoded = model_->encode(krea2_text_encoding(prompts[i], msl, taps_));
      ASSERT_THAT(encoded, IsOk()) << what;
      absl::StatusOr<torch::Tensor> rows = qwen_image_prompt_rows(*encoded, msl, "Krea 2");
      ASSERT_THAT(rows, IsOk()) << what;
      const torch::Tensor expected = embeds[i].index({mask[i].ne(0)});
      ASSERT_EQ(rows->sizes(), expected.sizes()) << what;
      const double diff = max_abs_diff(*rows, expected);
      std::printf("%s.prompt_embeds[%zu]: %lld rows of %lld, max abs diff %.3g\n", name.c_str(), i,
                  static_cast<long long>(rows->size(0)), static_cast<long long>(embeds.size(1)), diff);
      EXPECT_LT(diff, kQwen3VlTolerance) << what;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Qwen3VlParitySources, Qwen3VlParity,
                         ::testing::Values(Qwen3VlSource::kFixtureFile, Qwen3VlSource::kShardedHubNames),
                         [](const auto& info) {
                           return info.param == Qwen3VlSource::kFixtureFile ? "FixtureFile" : "ShardedHubNames";
                         });

// With the last layer and the final norm made NaN, every state before them
// is still upstream's: a stack stops at its deepest tap.
TEST(Qwen3VlParityLayers, NoLayerPastTheDeepestTapRuns) {
  testing::LoadedModel l = load_test_model(qwen3vl_fixture(), ModelLoadOptions());
  const auto* model = l.get<Qwen3VlModel>();
  ASSERT_NE(model, nullptr);
  const int64_t layers = model->config().num_hidden_layers;
  ASSERT_GE(layers, 2);
  const std::string last = absl::StrCat("layers.", layers - 1, ".");
  auto poisoned = std::make_unique<WeightStore>(torch::kFloat32);
  for (const std::string& name : model->weights().names()) {
    absl::StatusOr<torch::Tensor> t = model->weights().materialize(name, torch::kFloat32);
    ASSERT_THAT(t, IsOk());
    const bool past = absl::StartsWith(name, last) || name == "norm.weight";
    poisoned->add(name, past ? torch::full_like(*t, std::numeric_limits<float>::quiet_NaN()) : *t);
  }
  absl::StatusOr<std::unique_ptr<Qwen3VlModel>> cut = Qwen3VlModel::create(model->config(), std::move(poisoned));
  ASSERT_THAT(cut, IsOk());
  TensorFile io(qwen3vl_fixture() + "/io.safetensors");
  const torch::Tensor ids = io.get("pipe.input_ids"), mask = io.get("pipe.attention_mask");
  const int64_t taps[] = {0, layers - 1};
  absl::StatusOr<std::vector<torch::Tensor>> states =
      (*cut)->hidden_state_list(ids, mask, io.get("pipe.position_ids"), taps);
  ASSERT_THAT(states, IsOk());
  EXPECT_LT(max_abs_diff((*states)[1], io.get(absl::StrCat("pipe.hidden_states.", layers - 1))), kQwen3VlTolerance);
  const int64_t through_last[] = {layers};
  states = (*cut)->hidden_state_list(ids, mask, io.get("pipe.position_ids"), through_last);
  ASSERT_THAT(states, IsOk());
  EXPECT_TRUE(torch::isnan((*states)[0]).all().item<bool>()) << "the poisoned layer runs when its output is asked";
}

// The encode's reservation keeps room for the stack it returns: each tap's
// rows, and their copy into the stack.
TEST(Qwen3VlParityLayers, TheEncodeEstimateCountsTheStack) {
  testing::LoadedModel l = load_test_model(qwen3vl_fixture(), ModelLoadOptions());
  const auto* model = l.get<Qwen3VlModel>();
  ASSERT_NE(model, nullptr);
  const TextEncoding one = krea2_text_encoding("a red fox", 40, {1});
  const TextEncoding three = krea2_text_encoding("a red fox", 40, {1, 2, 3});
  const int64_t tokens = model->max_tokens_of(one), row = 4 * model->config().hidden_size;
  EXPECT_EQ(tokens, 40 + 34 - 5 + static_cast<int64_t>(kQwenImagePromptSuffix.size()) + 1);
  EXPECT_GE(model->request_activation_bytes(three) - model->request_activation_bytes(one), 4 * tokens * row);
  EXPECT_GT(model->encode_activation_bytes(2 * tokens), 2 * model->encode_activation_bytes(tokens) -
                                                            model->encode_activation_bytes(1));
}

TEST(Qwen3VlParityRope, InterleavedTablesAtThePipelinesPositions) {
  TensorFile io(qwen3vl_fixture() + "/io.safetensors");
  absl::StatusOr<Qwen3VlConfig> config = qwen3_vl_config_from_json(
      ::diffusiond::testing::read_json_file(qwen3vl_fixture() + "/config.json"), "config.json");
  ASSERT_THAT(config, IsOk());
  const auto [cos, sin] =
      qwen_rope_tables(config->rope_theta, config->head_dim, io.get("pipe.position_ids"), config->tower_spec().mrope);
  const double diff = std::max(max_abs_diff(cos, io.get("dbg.rope_cos")), max_abs_diff(sin, io.get("dbg.rope_sin")));
  std::printf("RoPE cos/sin: max abs diff %.3g\n", diff);
  EXPECT_LT(diff, 1e-6);
}

}  // namespace
}  // namespace diffusiond
