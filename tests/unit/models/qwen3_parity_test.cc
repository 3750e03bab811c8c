// Parity of the Qwen3 text encoder with upstream transformers' Qwen3Model
// and diffusers' ZImagePipeline.encode_prompt, on the reference fixture
// (DIFFUSIOND_QWEN3_FIXTURE, default the shared qwen3-tiny): every hidden
// state of the padded pipeline batch, the pipeline's prompt and negative
// embeds, prompts encoded alone, and the RoPE tables; loaded from the
// fixture folder, a clean transformers folder and a sharded copy with
// Qwen3Model's (unprefixed) names; the FP8-storage forward (the fixture
// has no FP8 reference) and bfloat16 compute.
//
// Tolerance: 1e-5 absolute. The fixture's float32 noise floor (its float64
// run against the float32 one) is ~2e-6 on hidden states of magnitude ~5;
// a wrong RoPE pairing, eps, mask or layer moves them by 1e-2 or more.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/checkpoint/safetensors_writer.h"
#include "core/models/common/qwen_attention.h"
#include "core/models/qwen3/qwen3_config.h"
#include "core/models/qwen3/qwen3_model.h"
#include "core/pipeline/z_image/z_image_text_encoding.h"
#include "core/util/file_text.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/fixtures.h"
#include "tests/testing/loaded_model.h"
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

constexpr double kQwen3Tolerance = 1e-5;

std::string qwen3_fixture() { return ::diffusiond::testing::fixture_folder("DIFFUSIOND_QWEN3_FIXTURE", "qwen3-tiny"); }

Qwen3Config qwen3_fixture_config() {
  absl::StatusOr<std::string> text = read_text_file(qwen3_fixture() + "/config.json");
  EXPECT_THAT(text, IsOk());
  absl::StatusOr<Qwen3Config> config = parse_qwen3_config(text.ok() ? *text : "", "config.json");
  EXPECT_THAT(config, IsOk());
  return config.ok() ? *config : Qwen3Config();
}

// How many tensors named "<prefix><i>" (i = 0, 1, …) the io file holds.
int count_items(const std::string& prefix) {
  absl::StatusOr<std::unique_ptr<Checkpoint>> io = Checkpoint::open(qwen3_fixture() + "/io.safetensors");
  EXPECT_THAT(io, IsOk());
  int n = 0;
  while (io.ok() && (*io)->find(absl::StrCat(prefix, n)) != nullptr) ++n;
  return n;
}

// Writes the fixture's weights as two shards plus an index, with the
// "model." prefix removed (Qwen3Model's names) and an lm_head to be dropped.
void write_sharded_copy(const TempDir& dir) {
  absl::StatusOr<std::unique_ptr<Checkpoint>> src = Checkpoint::open(qwen3_fixture() + "/model.safetensors");
  ASSERT_THAT(src, IsOk());
  const std::vector<TensorRecord>& tensors = (*src)->tensors();
  std::vector<const TensorRecord*> shards[2];
  for (size_t i = 0; i < tensors.size(); ++i) shards[i < tensors.size() / 2 ? 0 : 1].push_back(&tensors[i]);
  nlohmann::json index = {{"metadata", {{"total_size", (*src)->weight_bytes()}}},
                          {"weight_map", nlohmann::json::object()}};
  const auto stripped = [](const std::string& name) {
    return absl::StartsWith(name, "model.") ? name.substr(6) : name;
  };
  const TensorRecord* embed = (*src)->find("model.embed_tokens.weight");
  ASSERT_NE(embed, nullptr);
  for (int s = 0; s < 2; ++s) {
    const std::string file = absl::StrCat("model-0000", s + 1, "-of-00002.safetensors");
    std::vector<TensorSpec> specs;
    for (const TensorRecord* t : shards[s]) specs.push_back({stripped(t->name), t->dtype, t->shape});
    if (s == 1) specs.push_back({"lm_head.weight", embed->dtype, embed->shape});
    absl::StatusOr<std::unique_ptr<SafetensorsWriter>> w = SafetensorsWriter::create(dir.path(file), specs);
    ASSERT_THAT(w, IsOk());
    if (s == 1) shards[s].push_back(embed);
    for (size_t i = 0; i < shards[s].size(); ++i) {
      std::string bytes(shards[s][i]->nbytes, '\0');
      ASSERT_THAT((*src)->read(*shards[s][i], bytes.data()), IsOk());
      ASSERT_THAT((*w)->append(bytes.data(), static_cast<int64_t>(bytes.size())), IsOk());
      index["weight_map"][specs[i].name] = file;
    }
    ASSERT_THAT((*w)->close(), IsOk());
  }
  dir.write("model.safetensors.index.json", index.dump());
  std::filesystem::create_symlink(qwen3_fixture() + "/config.json", dir.path("config.json"));
}

enum class Qwen3Source { kFixtureFolder, kTransformersFolder, kShardedUnprefixed };

void PrintTo(Qwen3Source s, std::ostream* os) {
  *os << (s == Qwen3Source::kFixtureFolder        ? "fixture folder"
          : s == Qwen3Source::kTransformersFolder ? "transformers folder"
                                             : "sharded, unprefixed");
}

class Qwen3Parity : public ::testing::TestWithParam<Qwen3Source> {
 protected:
  void SetUp() override {
    std::string path = qwen3_fixture();
    if (GetParam() == Qwen3Source::kTransformersFolder) {
      std::filesystem::create_symlink(qwen3_fixture() + "/config.json", tmp_.path("config.json"));
      std::filesystem::create_symlink(qwen3_fixture() + "/model.safetensors", tmp_.path("model.safetensors"));
      path = tmp_.path();
    } else if (GetParam() == Qwen3Source::kShardedUnprefixed) {
      ASSERT_NO_FATAL_FAILURE(write_sharded_copy(tmp_));
      path = tmp_.path();
    }
    loaded_ = load_test_model(path, ModelLoadOptions());
    ASSERT_TRUE(loaded_.pin);
    model_ = dynamic_cast<const Qwen3Model*>(&loaded_.pin.as<::diffusiond::LoadedModel>()->model());
    ASSERT_NE(model_, nullptr);
  }

  TempDir tmp_;
  testing::LoadedModel loaded_;
  const Qwen3Model* model_ = nullptr;
  TensorFile io_{qwen3_fixture() + "/io.safetensors"};
};

TEST_P(Qwen3Parity, EveryHiddenStateOfThePaddedBatch) {
  const torch::Tensor ids = io_.get("pipe.input_ids"), mask = io_.get("pipe.attention_mask");
  const int64_t layers = model_->config().num_hidden_layers;
  for (int64_t k = 0; k <= layers; ++k) {
    absl::StatusOr<torch::Tensor> h = model_->hidden_states(ids, mask.to(torch::kBool), k);
    ASSERT_THAT(h, IsOk());
    const torch::Tensor expected = io_.get(absl::StrCat("pipe.hidden_states.", k));
    const double valid = masked_diff(*h, expected, mask), all = max_abs_diff(*h, expected);
    std::printf("hidden_states[%lld]: max abs diff %.3g on tokens, %.3g with padding rows\n",
                static_cast<long long>(k), valid, all);
    EXPECT_LT(valid, kQwen3Tolerance) << "hidden state " << k;
    EXPECT_LT(all, kQwen3Tolerance) << "hidden state " << k << ", padding rows included";
  }
  // Negative indices count from the end, as in Python.
  absl::StatusOr<torch::Tensor> m2 = model_->hidden_states(ids, mask, -2);
  absl::StatusOr<torch::Tensor> same = model_->hidden_states(ids, mask, layers - 1);
  ASSERT_THAT(m2, IsOk());
  ASSERT_THAT(same, IsOk());
  EXPECT_TRUE(torch::equal(*m2, *same));
  std::printf("hidden_states[-2] vs the float64 run: max abs diff %.3g on tokens\n",
              masked_diff(*m2, io_.get("pipe.hidden_states_m2_f64"), mask));
}

TEST_P(Qwen3Parity, PipelinePromptAndNegativeEmbeds) {
  for (const char* set : {"pipe", "neg"}) {
    const int items = count_items(absl::StrCat(set, ".prompt_embeds."));
    ASSERT_GT(items, 0) << set;
    absl::StatusOr<std::vector<torch::Tensor>> feats = z_image_caption_features(
        *model_, io_.get(absl::StrCat(set, ".input_ids")), io_.get(absl::StrCat(set, ".attention_mask")));
    ASSERT_THAT(feats, IsOk());
    ASSERT_EQ(feats->size(), static_cast<size_t>(items));
    for (int i = 0; i < items; ++i) {
      const torch::Tensor expected = io_.get(absl::StrCat(set, ".prompt_embeds.", i));
      ASSERT_EQ((*feats)[i].sizes(), expected.sizes()) << set << " item " << i;
      const double diff = max_abs_diff((*feats)[i], expected);
      std::printf("%s.prompt_embeds.%d [%lld rows]: max abs diff %.3g\n", set, i,
                  static_cast<long long>(expected.size(0)), diff);
      EXPECT_LT(diff, kQwen3Tolerance) << set << " item " << i;
    }
  }
}

TEST_P(Qwen3Parity, PromptsEncodedAloneWithoutPadding) {
  const int items = count_items("single.input_ids.");
  ASSERT_GT(items, 0);
  for (int i = 0; i < items; ++i) {
    const torch::Tensor ids = io_.get(absl::StrCat("single.input_ids.", i)).unsqueeze(0);
    absl::StatusOr<std::vector<torch::Tensor>> feats = z_image_caption_features(*model_, ids, torch::Tensor());
    ASSERT_THAT(feats, IsOk());
    const double diff = max_abs_diff((*feats)[0], io_.get(absl::StrCat("single.prompt_embeds.", i)));
    std::printf("single.prompt_embeds.%d [%lld tokens]: max abs diff %.3g\n", i,
                static_cast<long long>(ids.size(1)), diff);
    EXPECT_LT(diff, kQwen3Tolerance) << "prompt " << i;
  }
}

TEST_P(Qwen3Parity, StepMatchesThePipeline) {
  const torch::Tensor mask = io_.get("pipe.attention_mask");
  absl::StatusOr<NamedTensors> out = model_->step({{"input_ids", io_.get("pipe.input_ids")}, {"attention_mask", mask}});
  ASSERT_THAT(out, IsOk());
  const int64_t layers = model_->config().num_hidden_layers;
  ASSERT_EQ(out->count("hidden_states"), 1u);
  EXPECT_LT(masked_diff(out->at("hidden_states"), io_.get(absl::StrCat("pipe.hidden_states.", layers - 1)), mask),
            kQwen3Tolerance);
  for (int64_t i = 0; i < mask.size(0); ++i) {
    const std::string name = absl::StrCat("cap_feats_", i);
    ASSERT_EQ(out->count(name), 1u) << name;
    EXPECT_LT(max_abs_diff(out->at(name), io_.get(absl::StrCat("pipe.prompt_embeds.", i))), kQwen3Tolerance);
  }
}

INSTANTIATE_TEST_SUITE_P(Qwen3ParitySources, Qwen3Parity,
                         ::testing::Values(Qwen3Source::kFixtureFolder, Qwen3Source::kTransformersFolder,
                                           Qwen3Source::kShardedUnprefixed),
                         [](const auto& info) {
                           return info.param == Qwen3Source::kFixtureFolder        ? "FixtureFolder"
                                  : info.param == Qwen3Source::kTransformersFolder ? "TransformersFolder"
                                                                              : "ShardedUnprefixed";
                         });

TEST(Qwen3ParityRope, TablesMatchUpstreamRotaryEmbedding) {
  TensorFile io(qwen3_fixture() + "/io.safetensors");
  const Qwen3Config config = qwen3_fixture_config();
  const torch::Tensor cos = io.get("dbg.rope_cos"), sin = io.get("dbg.rope_sin");
  const torch::Tensor positions = torch::arange(cos.size(1), torch::kInt64).unsqueeze(0);
  const auto [our_cos, our_sin] = qwen_rope_tables(config.rope_theta, config.head_dim, positions, MropeLayout());
  const double diff = std::max(max_abs_diff(our_cos[0], cos[0]), max_abs_diff(our_sin[0], sin[0]));
  std::printf("RoPE cos/sin: max abs diff %.3g\n", diff);
  EXPECT_LT(diff, 1e-6);
}

// The fixture has no FP8 reference, so FP8 storage is checked for what it
// stores, against the float32 forward over the same decoded weights
// (exactly the computation, nothing of the codec's rounding), and, loosely,
// against the reference.
TEST(Qwen3ParityFp8, ProjectionsOnlyAndTheForwardOverDecodedWeights) {
  ModelLoadOptions options;
  options.fp8.format = Fp8Format::kE4M3Fn;
  testing::LoadedModel l = load_test_model(qwen3_fixture(), options);
  ASSERT_TRUE(l.pin);
  const auto* model = dynamic_cast<const Qwen3Model*>(&l.pin.as<::diffusiond::LoadedModel>()->model());
  ASSERT_NE(model, nullptr);
  const WeightStore& w = model->weights();
  auto decoded = std::make_unique<WeightStore>(torch::kFloat32);
  int64_t fp8 = 0;
  for (const std::string& name : w.names()) {
    const bool projection = absl::EndsWith(name, "_proj.weight");
    EXPECT_EQ(w.is_fp8(name), projection) << name;
    if (!projection) {
      EXPECT_EQ(w.dense(name)->scalar_type(), torch::kFloat32) << name;
    }
    fp8 += projection ? 1 : 0;
    absl::StatusOr<torch::Tensor> t = w.materialize(name, torch::kFloat32);
    ASSERT_THAT(t, IsOk());
    decoded->add(name, *t);
  }
  EXPECT_EQ(fp8, 7 * model->config().num_hidden_layers);
  absl::StatusOr<std::unique_ptr<Qwen3Model>> reference = Qwen3Model::create(model->config(), std::move(decoded));
  ASSERT_THAT(reference, IsOk());

  TensorFile io(qwen3_fixture() + "/io.safetensors");
  const torch::Tensor ids = io.get("pipe.input_ids"), mask = io.get("pipe.attention_mask");
  absl::StatusOr<torch::Tensor> ours = model->hidden_states(ids, mask, kZImageTextHiddenLayer);
  absl::StatusOr<torch::Tensor> theirs = (*reference)->hidden_states(ids, mask, kZImageTextHiddenLayer);
  ASSERT_THAT(ours, IsOk());
  ASSERT_THAT(theirs, IsOk());
  const double exact = masked_diff(*ours, *theirs, mask);
  const torch::Tensor fp32 =
      io.get(absl::StrCat("pipe.hidden_states.", model->config().num_hidden_layers - 1));
  const double codec = masked_diff(*ours, fp32, mask);
  const double scale = fp32.abs().max().item<double>();
  std::printf("FP8 storage: vs decoded-weight forward %.3g, vs float32 reference %.3g (max abs %.3g)\n",
              exact, codec, scale);
  EXPECT_LT(exact, kQwen3Tolerance);
  // E4M3 keeps 3 mantissa bits (~6% per weight; 7% of the scale on
  // qwen3-tiny); a codec fault (a wrong scale or byte order) errs by the
  // order of the scale itself.
  EXPECT_LT(codec, 0.25 * scale);
}

// At bfloat16 compute the fixture's weights are exact (they are BF16), so
// the embeddings match bit for bit; later states carry bfloat16 rounding.
TEST(Qwen3ParityBf16, RunsAtTheComputeDtype) {
  ModelLoadOptions options;
  options.compute_dtype = torch::kBFloat16;
  testing::LoadedModel l = load_test_model(qwen3_fixture(), options);
  ASSERT_TRUE(l.pin);
  const auto* model = dynamic_cast<const Qwen3Model*>(&l.pin.as<::diffusiond::LoadedModel>()->model());
  ASSERT_NE(model, nullptr);
  TensorFile io(qwen3_fixture() + "/io.safetensors");
  const torch::Tensor ids = io.get("pipe.input_ids"), mask = io.get("pipe.attention_mask");
  absl::StatusOr<torch::Tensor> h0 = model->hidden_states(ids, mask, 0);
  ASSERT_THAT(h0, IsOk());
  EXPECT_EQ(h0->scalar_type(), torch::kBFloat16);
  EXPECT_EQ(max_abs_diff(*h0, io.get("pipe.hidden_states.0")), 0.0);
  absl::StatusOr<std::vector<torch::Tensor>> feats = z_image_caption_features(*model, ids, mask);
  ASSERT_THAT(feats, IsOk());
  for (size_t i = 0; i < feats->size(); ++i) {
    const torch::Tensor expected = io.get(absl::StrCat("pipe.prompt_embeds.", i));
    EXPECT_EQ((*feats)[i].scalar_type(), torch::kBFloat16);
    const double diff = max_abs_diff((*feats)[i], expected);
    const double scale = expected.abs().max().item<double>();
    std::printf("bfloat16 pipe.prompt_embeds.%zu: max abs diff %.3g (max abs %.3g)\n", i, diff, scale);
    EXPECT_LT(diff, 0.05 * scale);
  }
}

}  // namespace
}  // namespace diffusiond
