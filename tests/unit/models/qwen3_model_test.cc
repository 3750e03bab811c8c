// Qwen3Model's contract on a small random-weight model: construction
// checks, Step's names and errors, the mask for items without tokens, and
// the family's recognition and config errors.
#include "core/models/qwen3/qwen3_model.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "core/models/model_loader.h"
#include "core/models/common/qwen_attention.h"
#include "core/models/qwen3/qwen3_params.h"
#include "core/pipeline/z_image/z_image_text_encoding.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/checkpoint_builder.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::testing::HasSubstr;

Qwen3Config small_config() {
  Qwen3Config c;
  c.vocab_size = 50;
  c.hidden_size = 24;
  c.intermediate_size = 40;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.rope_theta = 1e6;
  return c;
}

// Float32 weights for compute at float32; the embedding table stored at
// `embedding_dtype`, as a narrow-weights load keeps a bf16 one.
std::unique_ptr<WeightStore> random_weights(const Qwen3Config& c, torch::ScalarType embedding_dtype = torch::kFloat32) {
  torch::manual_seed(7);
  auto w = std::make_unique<WeightStore>(torch::kFloat32);
  for (const ParamSpec& p : qwen3_parameter_table(c)) {
    const torch::Tensor t =
        p.kind == ParamKind::kNormWeight ? 1.0 + 0.1 * torch::randn(p.shape) : torch::randn(p.shape) * 0.2;
    // The table holds bf16 values either way, as a bf16 checkpoint would.
    w->add(p.name, p.name == "embed_tokens.weight" ? t.to(torch::kBFloat16).to(embedding_dtype) : t);
  }
  return w;
}

std::unique_ptr<Qwen3Model> small_model() {
  absl::StatusOr<std::unique_ptr<Qwen3Model>> m = Qwen3Model::create(small_config(), random_weights(small_config()));
  EXPECT_THAT(m, IsOk());
  return m.ok() ? std::move(*m) : nullptr;
}

TEST(Qwen3Model, IsATextEncoderNamedQwen3) {
  std::unique_ptr<Qwen3Model> m = small_model();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->role(), ModelRole::kTextEncoder);
  EXPECT_EQ(m->architecture(), "qwen3");
}

TEST(Qwen3Model, CreateNamesMissingMisshapenAndUnexpectedTensors) {
  const Qwen3Config c = small_config();
  std::unique_ptr<WeightStore> w = random_weights(c);
  // A copy of `w` without `name`.
  const auto without = [&](const std::string& dropped) {
    auto out = std::make_unique<WeightStore>(torch::kFloat32);
    for (const std::string& name : w->names()) {
      if (name != dropped) out->add(name, *w->dense(name));
    }
    return out;
  };
  EXPECT_THAT(Qwen3Model::create(c, without("layers.1.self_attn.k_norm.weight")),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("lacks parameter 'layers.1.self_attn.k_norm.weight'")));

  std::unique_ptr<WeightStore> misshapen = without("layers.0.self_attn.q_proj.weight");
  misshapen->add("layers.0.self_attn.q_proj.weight", torch::zeros({24, 24}));
  EXPECT_THAT(Qwen3Model::create(c, std::move(misshapen)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("'layers.0.self_attn.q_proj.weight' has shape [24, 24], but the config expects [32, 24]")));

  std::unique_ptr<WeightStore> extra = random_weights(c);
  extra->add("lm_head.weight", torch::zeros({50, 24}));
  EXPECT_THAT(Qwen3Model::create(c, std::move(extra)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("unexpected tensor 'lm_head.weight'")));
}

TEST(Qwen3Model, HiddenStateZeroIsTheEmbeddingAndLayersCountFromTheEnd) {
  std::unique_ptr<Qwen3Model> m = small_model();
  ASSERT_NE(m, nullptr);
  const torch::Tensor ids = torch::tensor({{3, 1, 4, 1, 5}}, torch::kInt64);
  absl::StatusOr<torch::Tensor> h0 = m->hidden_states(ids, torch::Tensor(), 0);
  ASSERT_THAT(h0, IsOk());
  EXPECT_TRUE(torch::equal(*h0, m->weights().dense("embed_tokens.weight")->index_select(0, ids[0]).unsqueeze(0)));
  absl::StatusOr<torch::Tensor> last = m->hidden_states(ids, torch::Tensor(), 1);
  absl::StatusOr<torch::Tensor> minus2 = m->hidden_states(ids, torch::Tensor(), -2);
  ASSERT_THAT(last, IsOk());
  ASSERT_THAT(minus2, IsOk());
  EXPECT_TRUE(torch::equal(*last, *minus2));
  EXPECT_THAT(m->hidden_states(ids, torch::Tensor(), 3),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("hidden layer 3 is out of range")));
  EXPECT_THAT(m->hidden_states(ids, torch::Tensor(), -4),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected [-3, 2]")));
}

// With narrow weights the bf16 embedding table is upcast whole at each
// encode, so the estimate must hold it; the output is the widened model's.
TEST(Qwen3Model, TheEstimateHoldsANarrowEmbeddingTableUpcastPerUse) {
  Qwen3Config c = small_config();
  c.vocab_size = 5000;  // the table outweighs every MLP weight, as in Qwen3-4B
  absl::StatusOr<std::unique_ptr<Qwen3Model>> wide = Qwen3Model::create(c, random_weights(c, torch::kFloat32));
  absl::StatusOr<std::unique_ptr<Qwen3Model>> narrow = Qwen3Model::create(c, random_weights(c, torch::kBFloat16));
  ASSERT_THAT(wide, IsOk());
  ASSERT_THAT(narrow, IsOk());
  const int64_t table = c.vocab_size * c.hidden_size * 4, mlp = c.hidden_size * c.intermediate_size * 4;
  EXPECT_GE((*narrow)->encode_activation_bytes(8) - (*wide)->encode_activation_bytes(8), table - mlp);
  // The wide table holds the bf16 values widened, so both encode alike.
  const torch::Tensor ids = torch::tensor({{3, 1, 4, 1, 5}}, torch::kInt64);
  absl::StatusOr<torch::Tensor> hw = (*wide)->hidden_states(ids, torch::Tensor(), -1);
  absl::StatusOr<torch::Tensor> hn = (*narrow)->hidden_states(ids, torch::Tensor(), -1);
  ASSERT_THAT(hw, IsOk());
  ASSERT_THAT(hn, IsOk());
  EXPECT_TRUE(torch::equal(*hw, *hn));
}

TEST(Qwen3Model, KeptRowsDoNotDependOnRightPadding) {
  std::unique_ptr<Qwen3Model> m = small_model();
  ASSERT_NE(m, nullptr);
  const torch::Tensor ids = torch::tensor({{7, 8, 9, 0, 0}, {1, 2, 3, 4, 5}}, torch::kInt64);
  const torch::Tensor mask = torch::tensor({{1, 1, 1, 0, 0}, {1, 1, 1, 1, 1}}, torch::kInt64);
  absl::StatusOr<std::vector<torch::Tensor>> batch = z_image_caption_features(*m, ids, mask);
  absl::StatusOr<std::vector<torch::Tensor>> alone =
      z_image_caption_features(*m, ids[0].narrow(0, 0, 3).unsqueeze(0), torch::Tensor());
  ASSERT_THAT(batch, IsOk());
  ASSERT_THAT(alone, IsOk());
  ASSERT_EQ((*batch)[0].sizes(), (*alone)[0].sizes());
  EXPECT_TRUE(torch::allclose((*batch)[0], (*alone)[0], 1e-5, 1e-6));
  EXPECT_EQ((*batch)[1].size(0), 5);
}

TEST(Qwen3Model, AnItemWithoutTokensAttendsToEveryKeyAndKeepsNoRows) {
  const torch::Tensor allowed = qwen_attention_mask(torch::tensor({{true, false}, {false, false}}), 2, 2);
  EXPECT_TRUE(torch::equal(allowed[0], torch::tensor({{true, false}, {true, false}})));
  EXPECT_TRUE(allowed[1].all().item<bool>());
  std::unique_ptr<Qwen3Model> m = small_model();
  ASSERT_NE(m, nullptr);
  absl::StatusOr<NamedTensors> out = m->step({{"input_ids", torch::tensor({{1, 2}, {0, 0}}, torch::kInt64)},
                                              {"attention_mask", torch::tensor({{true, true}, {false, false}})}});
  ASSERT_THAT(out, IsOk());
  EXPECT_TRUE(torch::isfinite(out->at("hidden_states")).all().item<bool>());
  EXPECT_EQ(out->at("cap_feats_0").size(0), 2);
  EXPECT_EQ(out->at("cap_feats_1").size(0), 0);
}

TEST(Qwen3Model, StepNamesWhatIsWrong) {
  std::unique_ptr<Qwen3Model> m = small_model();
  ASSERT_NE(m, nullptr);
  const torch::Tensor ids = torch::tensor({{1, 2, 3}}, torch::kInt64);
  const auto code = absl::StatusCode::kInvalidArgument;
  EXPECT_THAT(m->step({}), StatusIs(code, HasSubstr("missing \"input_ids\"")));
  EXPECT_THAT(m->step({{"input_ids", ids}, {"cap_feats", ids}}), StatusIs(code, HasSubstr("unexpected input \"cap_feats\"")));
  EXPECT_THAT(m->step({{"input_ids", ids.to(torch::kFloat32)}}), StatusIs(code, HasSubstr("input_ids must be integer [B, L]")));
  EXPECT_THAT(m->step({{"input_ids", ids[0]}}), StatusIs(code, HasSubstr("got [3]")));
  EXPECT_THAT(m->step({{"input_ids", torch::tensor({{1, 50}}, torch::kInt64)}}),
              StatusIs(code, HasSubstr("ids in [1, 50], but the vocabulary is [0, 50)")));
  EXPECT_THAT(m->step({{"input_ids", ids}, {"attention_mask", torch::ones({1, 2}, torch::kInt64)}}),
              StatusIs(code, HasSubstr("attention_mask must be bool or integer [1, 3] like input_ids, got [1, 2]")));
  EXPECT_THAT(m->step({{"input_ids", ids}, {"hidden_layer", torch::tensor({0.5})}}),
              StatusIs(code, HasSubstr("\"hidden_layer\" must be one integer")));
  absl::StatusOr<NamedTensors> out = m->step({{"input_ids", ids}, {"hidden_layer", torch::tensor(int64_t{0})}});
  ASSERT_THAT(out, IsOk());
  EXPECT_EQ(out->size(), 2u);  // hidden_states, cap_feats_0
  EXPECT_EQ(out->at("hidden_states").sizes(), torch::IntArrayRef({1, 3, 24}));
}

TEST(Qwen3Family, RecognisesModelTypeAndRefusesUnsupportedConfigs) {
  TempDir dir;
  dir.write("config.json", R"({"model_type": "qwen3", "rope_scaling": {"rope_type": "yarn", "factor": 4.0}})");
  testing::write_safetensors(dir.path("model.safetensors"),
                             {testing::filled_tensor("model.norm.weight", DType::kF32, {24})});
  absl::StatusOr<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(dir.path());
  ASSERT_THAT(ckpt, IsOk());
  const ModelFamily* family = find_model_family(**ckpt);
  ASSERT_NE(family, nullptr);
  EXPECT_EQ(family->name(), "qwen3");
  EXPECT_THAT(plan_model(**ckpt, ModelLoadOptions()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("field 'rope_scaling'")));
}

TEST(Qwen3Family, AModelTypeOfAnotherJsonTypeIsNotRecognisedAndDoesNotThrow) {
  // It threw out of recognizes() (nlohmann's value() on a mismatched type),
  // which no caller catches: opening such a folder ended the daemon.
  TempDir dir;
  dir.write("config.json", R"({"model_type": 5})");
  testing::write_safetensors(dir.path("model.safetensors"),
                             {testing::filled_tensor("model.norm.weight", DType::kF32, {24})});
  absl::StatusOr<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(dir.path());
  ASSERT_THAT(ckpt, IsOk());
  EXPECT_EQ(find_model_family(**ckpt), nullptr);
  EXPECT_THAT(plan_model(**ckpt, ModelLoadOptions()),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("no supported architecture")));
}

}  // namespace
}  // namespace diffusiond
