// Parity of the Qwen2.5-VL text tower with upstream transformers'
// Qwen2_5_VLForConditionalGeneration and of Qwen-Image's recipe with
// diffusers' QwenImagePipeline.encode_prompt, on the reference fixture
// (DIFFUSIOND_QWEN25VL_FIXTURE, default the shared qwen25vl-tiny): every
// hidden state of every padded pipeline batch at upstream's positions, the
// positions Step derives itself, the pipeline's prompt embeddings and
// masks from each prompt encoded alone through the recipe (template, cut,
// prefix dropped, max_sequence_length), the RoPE tables, and FP8 storage;
// loaded from the fixture's file and from two shards named as transformers
// names the modules in memory ("model.language_model.*"); and ComfyUI's
// single files (qwen_2.5_vl_7b.safetensors, the same original layout in one
// file, and its scaled-fp8 variant), whose vision tower and LM head are
// never read or reserved, with the config inferred from the shapes.
//
// Tolerance: 2e-5 absolute, the fixture README's bound for a float32 port;
// its noise floor (the float64 run against the float32 one) is ~4e-6.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/models/common/qwen_attention.h"
#include "core/models/qwen25_vl/qwen25_vl_model.h"
#include "core/pipeline/qwen_image/qwen_image_pipeline.h"
#include "core/pipeline/qwen_image/qwen_image_prompt.h"
#include "core/util/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/loaded_model.h"
#include "tests/testing/qwen_vl_fixture.h"
#include "tests/testing/scaled_fp8_file.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tensor_file.h"
#include "tools/random_models/qwen_vl_random.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;
using ::diffusiond::testing::load_test_model;
using ::diffusiond::testing::masked_diff;
using ::diffusiond::testing::max_abs_diff;
using ::diffusiond::testing::TempDir;
using ::diffusiond::testing::TensorFile;

constexpr double kQwen25VlTolerance = 2e-5;

std::string qwen25vl_fixture() {
  return ::diffusiond::testing::fixture_folder("DIFFUSIOND_QWEN25VL_FIXTURE", "qwen25vl-tiny");
}

enum class Qwen25VlSource { kFixtureFile, kShardedInMemoryNames };

class Qwen25VlParity : public ::testing::TestWithParam<Qwen25VlSource> {
 protected:
  void SetUp() override {
    std::function<std::string(const std::string&)> rename;
    if (GetParam() == Qwen25VlSource::kShardedInMemoryNames) {
      rename = [](const std::string& name) {
        return absl::StartsWith(name, "model.") ? "model.language_model." + name.substr(6) : name;
      };
    }
    const std::string te = ::diffusiond::testing::write_pipeline_layout(qwen25vl_fixture(), tmp_, rename);
    loaded_ = load_test_model(te, ModelLoadOptions());
    model_ = loaded_.get<Qwen25VlModel>();
    ASSERT_NE(model_, nullptr);
    ASSERT_NE(model_->tokenizer(), nullptr) << "the tokenizer beside text_encoder/";
  }

  TempDir tmp_;
  testing::LoadedModel loaded_;
  const Qwen25VlModel* model_ = nullptr;
  TensorFile io_{qwen25vl_fixture() + "/io.safetensors"};
  nlohmann::json tokens_ = ::diffusiond::testing::read_json_file(qwen25vl_fixture() + "/tokens.json");
};

TEST_P(Qwen25VlParity, EveryHiddenStateOfEveryPaddedBatch) {
  const int64_t layers = model_->config().num_hidden_layers;
  std::vector<int64_t> all;
  for (int64_t k = 0; k <= layers; ++k) all.push_back(k);
  int cases = 0;
  for (const auto& [name, call] : tokens_.at("pipeline").items()) {
    if (name == "trunc") continue;  // 1058 tokens: its states are not stored
    const torch::Tensor ids = io_.get(name + ".input_ids"), mask = io_.get(name + ".attention_mask");
    const torch::Tensor positions = io_.get(name + ".position_ids");
    absl::StatusOr<std::vector<torch::Tensor>> states = model_->hidden_state_list(ids, mask, positions, all);
    ASSERT_THAT(states, IsOk()) << name;
    for (int64_t k = 0; k <= layers; ++k) {
      const torch::Tensor expected = io_.get(absl::StrCat(name, ".hidden_states.", k));
      const double valid = masked_diff((*states)[k], expected, mask), every = max_abs_diff((*states)[k], expected);
      std::printf("%s hidden_states[%lld]: max abs diff %.3g on tokens, %.3g with padding rows\n", name.c_str(),
                  static_cast<long long>(k), valid, every);
      EXPECT_LT(valid, kQwen25VlTolerance) << name << " state " << k;
      EXPECT_LT(every, kQwen25VlTolerance) << name << " state " << k << ", padding rows included";
    }
    // Step derives upstream's positions (get_rope_index: padding at 1)
    // from the mask itself.
    absl::StatusOr<NamedTensors> step = model_->step({{"input_ids", ids}, {"attention_mask", mask}});
    ASSERT_THAT(step, IsOk());
    EXPECT_LT(max_abs_diff(step->at("hidden_states"), io_.get(absl::StrCat(name, ".hidden_states.", layers))),
              kQwen25VlTolerance)
        << name;
    ++cases;
  }
  EXPECT_GE(cases, 4);
}

// Each prompt alone through the recipe, as EncodePrompt and Generate ask:
// upstream's rows for it, then upstream's zero padding and mask (none when
// all ones) are what a batch adds.
TEST_P(Qwen25VlParity, PipelinePromptEmbedsFromEachPromptAlone) {
  for (const auto& [name, call] : tokens_.at("pipeline").items()) {
    const std::vector<std::string> prompts = call.at("prompts").get<std::vector<std::string>>();
    const int64_t msl = call.at("max_sequence_length").get<int64_t>();
    const torch::Tensor embeds = io_.get(name + ".prompt_embeds");
    const bool mask_is_none = call.at("mask_is_none").get<bool>();
    const torch::Tensor mask = mask_is_none ? torch::Tensor() : io_.get(name + ".prompt_embeds_mask");
    ASSERT_EQ(embeds.size(0), static_cast<int64_t>(prompts.size())) << name;
    for (size_t i = 0; i < prompts.size(); ++i) {
      const std::string what = absl::StrCat(name, " prompt ", i);
      absl::StatusOr<EncodedText> encoded = model_->encode(qwen_image_text_encoding(prompts[i], msl));
      ASSERT_THAT(encoded, IsOk()) << what;
      // Upstream's tokens up to what can be kept (the ids themselves:
      // qwen_image_prompt_test).
      const std::vector<int64_t> upstream_mask = call.at("attention_mask").at(i).get<std::vector<int64_t>>();
      const int64_t real = std::accumulate(upstream_mask.begin(), upstream_mask.end(), int64_t{0});
      EXPECT_EQ(encoded->tokens, std::min<int64_t>(real, kQwenImagePromptDropTokens + msl)) << what;
      absl::StatusOr<torch::Tensor> rows = qwen_image_prompt_rows(*encoded, msl, "Qwen-Image");
      ASSERT_THAT(rows, IsOk()) << what;
      const int64_t kept = rows->size(0);
      const double diff = max_abs_diff(*rows, embeds[i].narrow(0, 0, kept));
      std::printf("%s.prompt_embeds[%zu]: %lld rows of %lld, max abs diff %.3g\n", name.c_str(), i,
                  static_cast<long long>(kept), static_cast<long long>(embeds.size(1)), diff);
      EXPECT_LT(diff, kQwen25VlTolerance) << what;
      // What a batch adds: zero rows after the prompt's, masked out.
      const int64_t pad = embeds.size(1) - kept;
      if (pad > 0) EXPECT_EQ(embeds[i].narrow(0, kept, pad).abs().max().item<float>(), 0.0f) << what;
      if (mask.defined()) {
        EXPECT_EQ(mask[i].sum().item<int64_t>(), kept) << what;
      } else {
        EXPECT_EQ(pad, 0) << what << ": upstream drops only an all-ones mask";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Qwen25VlParitySources, Qwen25VlParity,
                         ::testing::Values(Qwen25VlSource::kFixtureFile, Qwen25VlSource::kShardedInMemoryNames),
                         [](const auto& info) {
                           return info.param == Qwen25VlSource::kFixtureFile ? "FixtureFile" : "ShardedInMemoryNames";
                         });

TEST(Qwen25VlParityRope, TablesAtUpstreamsPositions) {
  TensorFile io(qwen25vl_fixture() + "/io.safetensors");
  absl::StatusOr<Qwen25VlConfig> config = qwen25_vl_config_from_json(
      ::diffusiond::testing::read_json_file(qwen25vl_fixture() + "/config.json"), "config.json");
  ASSERT_THAT(config, IsOk());
  const torch::Tensor cos = io.get("dbg.rope_cos"), sin = io.get("dbg.rope_sin");  // [3, B, T, head_dim]
  const auto [ours_cos, ours_sin] =
      qwen_rope_tables(config->rope_theta, config->head_dim(), io.get("pipe.position_ids"), config->tower_spec().mrope);
  double diff = 0;
  for (int64_t row = 0; row < 3; ++row) {  // text: every M-RoPE row alike
    diff = std::max({diff, max_abs_diff(ours_cos, cos[row]), max_abs_diff(ours_sin, sin[row])});
  }
  std::printf("RoPE cos/sin: max abs diff %.3g\n", diff);
  EXPECT_LT(diff, 1e-6);
}

// The fixture has no FP8 reference: FP8 storage is checked for what it
// stores, and against the float32 forward over the same decoded weights.
TEST(Qwen25VlParityFp8, ProjectionWeightsOnlyAndTheForwardOverDecodedWeights) {
  ModelLoadOptions options;
  options.fp8.format = Fp8Format::kE4M3Fn;
  testing::LoadedModel l = load_test_model(qwen25vl_fixture(), options);
  const auto* model = l.get<Qwen25VlModel>();
  ASSERT_NE(model, nullptr);
  const WeightStore& w = model->weights();
  auto decoded = std::make_unique<WeightStore>(torch::kFloat32);
  int64_t fp8 = 0;
  for (const std::string& name : w.names()) {
    const bool projection = absl::EndsWith(name, "_proj.weight");
    EXPECT_EQ(w.is_fp8(name), projection) << name;
    fp8 += projection ? 1 : 0;
    absl::StatusOr<torch::Tensor> t = w.materialize(name, torch::kFloat32);
    ASSERT_THAT(t, IsOk());
    decoded->add(name, *t);
  }
  EXPECT_EQ(fp8, 7 * model->config().num_hidden_layers);
  absl::StatusOr<std::unique_ptr<Qwen25VlModel>> reference = Qwen25VlModel::create(model->config(), std::move(decoded));
  ASSERT_THAT(reference, IsOk());
  TensorFile io(qwen25vl_fixture() + "/io.safetensors");
  const torch::Tensor ids = io.get("pipe.input_ids"), mask = io.get("pipe.attention_mask");
  const torch::Tensor positions = io.get("pipe.position_ids");
  const int64_t last[] = {-1};
  absl::StatusOr<std::vector<torch::Tensor>> ours = model->hidden_state_list(ids, mask, positions, last);
  absl::StatusOr<std::vector<torch::Tensor>> theirs = (*reference)->hidden_state_list(ids, mask, positions, last);
  ASSERT_THAT(ours, IsOk());
  ASSERT_THAT(theirs, IsOk());
  const torch::Tensor fp32 = io.get(absl::StrCat("pipe.hidden_states.", model->config().num_hidden_layers));
  const double exact = masked_diff((*ours)[0], (*theirs)[0], mask), codec = masked_diff((*ours)[0], fp32, mask);
  const double scale = fp32.abs().max().item<double>();
  std::printf("FP8 storage: vs decoded-weight forward %.3g, vs float32 reference %.3g (max abs %.3g)\n", exact, codec,
              scale);
  EXPECT_LT(exact, kQwen25VlTolerance);
  EXPECT_LT(codec, 0.25 * scale);  // E4M3's 3 mantissa bits; a codec fault errs by the scale itself
}

// The last hidden state of the fixture's "pipe" batch.
absl::StatusOr<torch::Tensor> last_state(const Qwen25VlModel& model, const TensorFile& io) {
  const int64_t last[] = {-1};
  DIFFUSIOND_ASSIGN_OR_RETURN(
      std::vector<torch::Tensor> states,
      model.hidden_state_list(io.get("pipe.input_ids"), io.get("pipe.attention_mask"), io.get("pipe.position_ids"),
                              last));
  return states[0];
}

// Copies the fixture's weights file alone into `dir` as ComfyUI names its
// file (the layout is already the one ComfyUI keeps), with the fixture's
// config.json beside it when `with_config`.
std::string comfy_file(const TempDir& dir, bool with_config) {
  const std::string path = dir.path("qwen_2.5_vl_7b.safetensors");
  std::filesystem::copy_file(qwen25vl_fixture() + "/model.safetensors", path);
  if (with_config) std::filesystem::copy_file(qwen25vl_fixture() + "/config.json", dir.path("config.json"));
  return path;
}

// ComfyUI's qwen_2.5_vl_7b.safetensors layout in one file, the fixture's
// config.json beside it (its head_dim of 12 is not the 128 a config is
// inferred with): recognised as Qwen2.5-VL, the vision tower and LM head
// dropped from the plan (never read or reserved), and upstream's hidden
// states.
TEST(Qwen25VlSingleFile, ComfyUiFileGivesUpstreamsHiddenStatesAndSkipsVisionAndHead) {
  TempDir tmp;
  const std::string file = comfy_file(tmp, true);
  absl::StatusOr<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(file);
  ASSERT_THAT(ckpt, IsOk());
  EXPECT_EQ((*ckpt)->layout(), CheckpointLayout::kSingleFile);
  absl::StatusOr<ModelPlan> plan = plan_model(**ckpt, ModelLoadOptions());
  ASSERT_THAT(plan, IsOk());
  EXPECT_EQ(plan->family->name(), kQwen25VlArchitecture);
  EXPECT_THAT(plan->recipe->describe(), HasSubstr("config from "));
  ASSERT_FALSE(plan->plan.dropped.empty());
  int64_t dropped_bytes = 0;
  for (const std::string& name : plan->plan.dropped) {
    EXPECT_TRUE(absl::StartsWith(name, "visual.") || name == "lm_head.weight") << name;
    dropped_bytes += (*ckpt)->find(name)->nbytes;
  }
  for (const PlannedTensor& t : plan->plan.tensors) {
    EXPECT_FALSE(absl::StartsWith(t.source->name, "visual.") || t.source->name == "lm_head.weight") << t.source->name;
  }
  // Nothing dropped is read or held: the plan's source is the tower's.
  EXPECT_EQ(plan->plan.source_bytes + dropped_bytes, (*ckpt)->weight_bytes());

  testing::LoadedModel l = load_test_model(file, ModelLoadOptions());
  const auto* model = l.get<Qwen25VlModel>();
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(l.ram->snapshot().committed_bytes, plan->plan.final_bytes);
  TensorFile io(qwen25vl_fixture() + "/io.safetensors");
  absl::StatusOr<torch::Tensor> out = last_state(*model, io);
  ASSERT_THAT(out, IsOk());
  const double diff = masked_diff(
      *out, io.get(absl::StrCat("pipe.hidden_states.", model->config().num_hidden_layers)), io.get("pipe.attention_mask"));
  std::printf("ComfyUI-layout single file: max abs diff %.3g\n", diff);
  EXPECT_LT(diff, kQwen25VlTolerance);
}

// The _fp8_scaled variant, the config beside it: every projection weight
// (the tower's and the vision tower's) float8_e4m3fn with a per-tensor
// scale_weight and the scaled_fp8 marker. Its tower's projections load as FP8 codes with their
// scales, so its hidden states equal those of the same weights dequantised
// (code x scale) in a plain file, and stay within E4M3's noise of
// upstream's float32 ones; the vision tower's FP8 weights and scales are
// skipped unread.
TEST(Qwen25VlSingleFile, ScaledFp8VariantAppliesItsScales) {
  TempDir tmp;
  const testing::ScaledFp8Copy copy = testing::write_scaled_fp8_copy(
      qwen25vl_fixture() + "/model.safetensors", tmp.path("qwen_2.5_vl_7b_fp8_scaled.safetensors"),
      tmp.path("dequantized.safetensors"), "",
      [](const TensorRecord& t) { return absl::EndsWith(t.name, "proj.weight") && t.shape.size() == 2; });
  std::filesystem::copy_file(qwen25vl_fixture() + "/config.json", tmp.path("config.json"));
  testing::LoadedModel scaled = load_test_model(copy.scaled, ModelLoadOptions());
  testing::LoadedModel dequantized = load_test_model(copy.dequantized, ModelLoadOptions());
  const auto* model = scaled.get<Qwen25VlModel>();
  ASSERT_NE(model, nullptr);
  ASSERT_NE(dequantized.get<Qwen25VlModel>(), nullptr);
  EXPECT_EQ(scaled.checkpoint->layout(), CheckpointLayout::kScaledFp8File);
  const int64_t tower = 7 * model->config().num_hidden_layers;
  EXPECT_GT(copy.quantized, tower) << "the vision tower's projections are FP8 too";
  EXPECT_EQ(model->weights().fp8_count(), tower);
  TensorFile io(qwen25vl_fixture() + "/io.safetensors");
  absl::StatusOr<torch::Tensor> ours = last_state(*model, io);
  absl::StatusOr<torch::Tensor> exact = last_state(*dequantized.get<Qwen25VlModel>(), io);
  ASSERT_THAT(ours, IsOk());
  ASSERT_THAT(exact, IsOk());
  const torch::Tensor mask = io.get("pipe.attention_mask");
  const torch::Tensor fp32 = io.get(absl::StrCat("pipe.hidden_states.", model->config().num_hidden_layers));
  const double vs_dequantized = masked_diff(*ours, *exact, mask), vs_upstream = masked_diff(*ours, fp32, mask);
  const double scale = fp32.abs().max().item<double>();
  std::printf("scaled fp8 single file: vs dequantised %.3g, vs float32 upstream %.3g (max abs %.3g)\n",
              vs_dequantized, vs_upstream, scale);
  EXPECT_LT(vs_dequantized, kQwen25VlTolerance);
  EXPECT_LT(vs_upstream, 0.25 * scale);  // E4M3's 3 mantissa bits; a missing scale errs by far more
  EXPECT_GT(vs_upstream, 0.0) << "the weights were quantised";
}

// Without a config.json, the config comes from the shapes, head_dim 128
// assumed: a tower of that head_dim (random weights, the fixture's ids)
// infers its own config and gives the folder's hidden states exactly; the
// fixture's head_dim 12 is refused, asking for a config.
TEST(Qwen25VlSingleFile, ConfigIsInferredFromShapesOrRefusedClearly) {
  TempDir tmp;
  Qwen25VlConfig c;
  c.vocab_size = 640;
  c.hidden_size = 256;
  c.intermediate_size = 384;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.num_key_value_heads = 1;
  c.max_position_embeddings = 128000;
  c.mrope_section = {16, 24, 24};
  ASSERT_THAT(write_random_qwen25_vl(c, tmp.path("folder"), 3), IsOk());
  std::filesystem::create_directories(tmp.path("comfy"));
  std::filesystem::copy_file(tmp.path("folder/model.safetensors"), tmp.path("comfy/qwen.safetensors"));
  testing::LoadedModel folder = load_test_model(tmp.path("folder"), ModelLoadOptions());
  testing::LoadedModel single = load_test_model(tmp.path("comfy/qwen.safetensors"), ModelLoadOptions());
  ASSERT_NE(folder.get<Qwen25VlModel>(), nullptr);
  const auto* model = single.get<Qwen25VlModel>();
  ASSERT_NE(model, nullptr);
  const Qwen25VlConfig& inferred = model->config();
  EXPECT_EQ(to_json(inferred), to_json(c));
  TensorFile io(qwen25vl_fixture() + "/io.safetensors");
  absl::StatusOr<torch::Tensor> a = last_state(*model, io);
  absl::StatusOr<torch::Tensor> b = last_state(*folder.get<Qwen25VlModel>(), io);
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ(max_abs_diff(*a, *b), 0.0);

  TempDir bare;
  absl::StatusOr<std::unique_ptr<Checkpoint>> tiny = Checkpoint::open(comfy_file(bare, false));
  ASSERT_THAT(tiny, IsOk());
  EXPECT_THAT(plan_model(**tiny, ModelLoadOptions()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("width 24 and k_proj's 12 rows are not both multiples of the head_dim 128")));
}

}  // namespace
}  // namespace diffusiond
