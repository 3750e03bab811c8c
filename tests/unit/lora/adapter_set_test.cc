// Attaching adapters to a model: the checks against its weights (nothing
// attached half-way), fused originals split by the model's own part sizes,
// the sidecar term against the merged weight, and the per-call scope.
#include "core/lora/adapter_set.h"

#include <torch/torch.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/checkpoint/safetensors_writer.h"
#include "core/lora/lora_adapter.h"
#include "core/lora/merged_weight.h"
#include "core/models/linear_adapter.h"
#include "gtest/gtest.h"
#include "tests/testing/loaded_model.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tools/random_models/clip_random.h"
#include "tools/random_models/flux_random.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::load_test_model;
using ::diffusiond::testing::LoadedModel;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::testing::AllOf;
using ::testing::HasSubstr;

using LoraTensors = std::vector<std::pair<std::string, torch::Tensor>>;

// The demo FLUX: dim 256 (4 heads of 64), MLP 1024, 2 double and 4 single
// blocks, a guidance embedder.
constexpr int64_t kDemoDim = 256;
constexpr int64_t kDemoMlp = 1024;

class AdapterSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_THAT(write_random_flux(demo_flux_config(), tmp_.path("flux"), 7), IsOk());
    loaded_ = load_test_model(tmp_.path("flux"), ModelLoadOptions());
    model_ = loaded_.get<Model>();
    ASSERT_NE(model_, nullptr);
  }

  // Writes `tensors` (float32) and reads them as a `architecture` adapter.
  std::shared_ptr<const LoraAdapter> adapter(const std::string& name, const LoraTensors& tensors,
                                             absl::string_view architecture = "flux",
                                             torch::ScalarType dtype = torch::kFloat32) {
    std::vector<TensorSpec> specs;
    for (const auto& [key, t] : tensors) specs.push_back({key, DType::kF32, t.sizes().vec()});
    const std::string path = tmp_.path(name);
    absl::StatusOr<std::unique_ptr<SafetensorsWriter>> w = SafetensorsWriter::create(path, specs);
    EXPECT_THAT(w, IsOk());
    for (const auto& [key, t] : tensors) {
      EXPECT_THAT((*w)->append(static_cast<const char*>(t.data_ptr()), t.nbytes()), IsOk());
    }
    EXPECT_THAT((*w)->close(), IsOk());
    absl::StatusOr<std::unique_ptr<LoraAdapter>> a = LoraAdapter::read(path, architecture, dtype);
    EXPECT_THAT(a, IsOk());
    return a.ok() ? std::shared_ptr<const LoraAdapter>(std::move(*a)) : nullptr;
  }

  TempDir tmp_;
  LoadedModel loaded_;
  const Model* model_ = nullptr;
};

torch::Tensor seeded_randn(std::vector<int64_t> shape, uint64_t seed) {
  torch::manual_seed(seed);
  return torch::randn(shape) * 0.1;
}

// A module of rank 4 under `stem` (kohya suffixes), B of `out` rows.
LoraTensors kohya_module(const std::string& stem, int64_t in, int64_t out, double alpha, uint64_t seed) {
  return {{stem + ".lora_down.weight", seeded_randn({4, in}, seed)},
          {stem + ".lora_up.weight", seeded_randn({out, 4}, seed + 1)},
          {stem + ".alpha", torch::full({}, alpha)}};
}

// linear1 splits into q, k, v and the MLP by the model's own rows (FLUX.1's
// [3072, 3072, 3072, 12288] would not fit this model): A is every part's,
// B's rows go to the parts in order. The sidecar term on each part is the
// merged weight's product.
TEST_F(AdapterSetTest, FusedOriginalSplitsByTheModelsPartSizes) {
  const LoraTensors t = kohya_module("lora_unet_single_blocks_1_linear1", kDemoDim, 3 * kDemoDim + kDemoMlp, 2.0, 11);
  std::shared_ptr<const LoraAdapter> a = adapter("linear1.safetensors", t);
  ASSERT_NE(a, nullptr);
  absl::StatusOr<std::unique_ptr<AdapterSet>> set = AdapterSet::create(*model_, {{a, 0.5}});
  ASSERT_THAT(set, IsOk());
  const std::string b = "single_transformer_blocks.1.";
  EXPECT_EQ((*set)->weights(), (std::vector<std::string>{b + "attn.to_k.weight", b + "attn.to_q.weight",
                                                         b + "attn.to_v.weight", b + "proj_mlp.weight"}));
  const torch::Tensor A = t[0].second.to(torch::kFloat64), B = t[1].second.to(torch::kFloat64);
  const double scale = 0.5 * 2.0 / 4;
  const torch::Tensor x = seeded_randn({3, kDemoDim}, 12);
  int64_t first = 0;
  for (const auto& [part, rows] : std::vector<std::pair<std::string, int64_t>>{
           {"attn.to_q", kDemoDim}, {"attn.to_k", kDemoDim}, {"attn.to_v", kDemoDim}, {"proj_mlp", kDemoMlp}}) {
    const std::string weight = b + part + ".weight";
    absl::StatusOr<torch::Tensor> w = model_->weights().materialize(weight, torch::kFloat64);
    ASSERT_THAT(w, IsOk());
    const torch::Tensor want = *w + scale * torch::mm(B.narrow(0, first, rows), A);
    absl::StatusOr<torch::Tensor> merged = merged_weight(**set, weight, torch::kFloat64);
    ASSERT_THAT(merged, IsOk());
    EXPECT_LT((*merged - want).abs().max().item<double>(), 1e-12) << weight;

    const torch::Tensor y = torch::linear(x, w->to(torch::kFloat32));
    const torch::Tensor sidecar = (*set)->add_term(y.clone(), x, weight);
    const torch::Tensor merged_y = torch::linear(x.to(torch::kFloat64), want);
    EXPECT_LT((sidecar.to(torch::kFloat64) - merged_y).abs().max().item<double>(), 1e-5) << weight;
    first += rows;
  }
  // A weight no adapter targets is passed through as it is.
  const torch::Tensor y = torch::ones({3, kDemoDim});
  EXPECT_TRUE(torch::equal((*set)->add_term(y.clone(), x, "proj_out.weight"), y));
}

TEST_F(AdapterSetTest, ShapesThatDoNotFitTheModelAreRefusedNamingTheWeight) {
  // A of the wrong width.
  std::shared_ptr<const LoraAdapter> wide = adapter(
      "wide.safetensors", kohya_module("lora_unet_double_blocks_0_img_attn_proj", kDemoDim + 8, kDemoDim, 4, 1));
  EXPECT_THAT(AdapterSet::create(*model_, {{wide, 1}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("wide.safetensors"), HasSubstr("lora_down [4, 264]"),
                             HasSubstr("'transformer_blocks.0.attn.to_out.0.weight' is [256, 256]"))));
  // B rows that the parts do not add up to.
  std::shared_ptr<const LoraAdapter> rows = adapter(
      "rows.safetensors", kohya_module("lora_unet_double_blocks_1_img_attn_qkv", kDemoDim, 3 * kDemoDim + 3, 4, 2));
  EXPECT_THAT(AdapterSet::create(*model_, {{rows, 1}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("lora_up [771, 4]"), HasSubstr("its parts have 768 rows"))));
  // A block the model does not have.
  std::shared_ptr<const LoraAdapter> block =
      adapter("block.safetensors", kohya_module("lora_unet_double_blocks_7_img_attn_proj", kDemoDim, kDemoDim, 4, 3));
  EXPECT_THAT(
      AdapterSet::create(*model_, {{block, 1}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("updates 'transformer_blocks.7.attn.to_out.0.weight', which the model does not hold")));
}

TEST_F(AdapterSetTest, AdaptersForAnotherArchitectureDtypeOrWeightAreRefused) {
  const LoraTensors z = kohya_module("lora_unet_layers_0_attention_to_q", kDemoDim, kDemoDim, 4, 4);
  std::shared_ptr<const LoraAdapter> other = adapter("z.safetensors", z, "z-image");
  EXPECT_THAT(AdapterSet::create(*model_, {{other, 1}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is for z-image, but the model is flux")));

  const LoraTensors f = kohya_module("lora_unet_double_blocks_0_img_attn_proj", kDemoDim, kDemoDim, 4, 5);
  std::shared_ptr<const LoraAdapter> bf16 = adapter("bf16.safetensors", f, "flux", torch::kBFloat16);
  EXPECT_THAT(AdapterSet::create(*model_, {{bf16, 1}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("was loaded at bfloat16, but the model computes at float32")));

  std::shared_ptr<const LoraAdapter> good = adapter("good.safetensors", f);
  EXPECT_THAT(AdapterSet::create(*model_, {{good, 1}, {good, NAN}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected a finite number")));
  // Weight 0 is checked, then leaves the adapter out.
  absl::StatusOr<std::unique_ptr<AdapterSet>> off = AdapterSet::create(*model_, {{good, 0}});
  ASSERT_THAT(off, IsOk());
  EXPECT_TRUE((*off)->weights().empty());
}

// Two adapters on one weight add; the scope attaches the set for one
// thread's calls on this model only, and detaching restores the base.
TEST_F(AdapterSetTest, StackedAdaptersAddAndTheScopeIsPerCall) {
  const std::string proj = "lora_unet_double_blocks_0_img_attn_proj";
  std::shared_ptr<const LoraAdapter> a1 = adapter("a1.safetensors", kohya_module(proj, kDemoDim, kDemoDim, 4, 21));
  std::shared_ptr<const LoraAdapter> a2 = adapter("a2.safetensors", kohya_module(proj, kDemoDim, kDemoDim, 2, 31));
  absl::StatusOr<std::unique_ptr<AdapterSet>> set = AdapterSet::create(*model_, {{a1, 0.7}, {a2, -0.3}});
  ASSERT_THAT(set, IsOk());
  const std::string weight = "transformer_blocks.0.attn.to_out.0.weight";
  ASSERT_NE((*set)->terms(weight), nullptr);
  ASSERT_EQ((*set)->terms(weight)->size(), 2u);
  EXPECT_DOUBLE_EQ((*set)->terms(weight)->at(0).scale, 0.7);
  EXPECT_DOUBLE_EQ((*set)->terms(weight)->at(1).scale, -0.3 * 0.5);

  EXPECT_EQ(LinearAdapterScope::current_for(model_), nullptr);
  {
    LinearAdapterScope scope = (*set)->attach();
    EXPECT_EQ(LinearAdapterScope::current_for(model_), set->get());
    int other = 0;
    EXPECT_EQ(LinearAdapterScope::current_for(reinterpret_cast<const Model*>(&other)), nullptr);
  }
  EXPECT_EQ(LinearAdapterScope::current_for(model_), nullptr);
}

// At bfloat16 compute, A and B are held and multiplied at bfloat16: the
// sidecar product stays within bfloat16's rounding of the merged one.
TEST_F(AdapterSetTest, Bfloat16TermIsAddedAtTheComputeDtype) {
  ModelLoadOptions options;
  options.compute_dtype = torch::kBFloat16;
  LoadedModel bf16 = load_test_model(tmp_.path("flux"), options);
  const Model* model = bf16.get<Model>();
  ASSERT_NE(model, nullptr);
  const LoraTensors t = kohya_module("lora_unet_double_blocks_1_txt_mlp_2", kDemoMlp, kDemoDim, 8, 41);
  std::shared_ptr<const LoraAdapter> a = adapter("bf16_term.safetensors", t, "flux", torch::kBFloat16);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->modules().at(0).down.scalar_type(), torch::kBFloat16);
  absl::StatusOr<std::unique_ptr<AdapterSet>> set = AdapterSet::create(*model, {{a, 1.5}});
  ASSERT_THAT(set, IsOk());
  const std::string weight = "transformer_blocks.1.ff_context.net.2.weight";
  absl::StatusOr<torch::Tensor> w = model->weights().materialize(weight, torch::kBFloat16);
  ASSERT_THAT(w, IsOk());
  const torch::Tensor x = seeded_randn({5, kDemoMlp}, 42).to(torch::kBFloat16);
  const torch::Tensor y = (*set)->add_term(torch::linear(x, *w), x, weight);
  EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
  absl::StatusOr<torch::Tensor> merged = merged_weight(**set, weight, torch::kFloat64);
  ASSERT_THAT(merged, IsOk());
  const torch::Tensor want = torch::linear(x.to(torch::kFloat64), *merged);
  const double scale = want.abs().max().item<double>();
  EXPECT_LT((y.to(torch::kFloat64) - want).abs().max().item<double>(), 2e-2 * scale);
  const double effect =
      (want - torch::linear(x.to(torch::kFloat64), w->to(torch::kFloat64))).abs().max().item<double>();
  EXPECT_GT(effect, 0.1 * scale);
}

// What a text encoder's call reserves for the A and B copies
// for_text_encoder makes: the modules for that encoder, at its element size,
// and only when the adapter was read at another dtype.
TEST_F(AdapterSetTest, TextEncoderConversionBytesCountTheCopiesAtTheEncodersDtype) {
  const ClipTextConfig clip = demo_clip_text_config();
  ASSERT_THAT(write_random_clip_text_encoder(tmp_.path("clip"), clip, 3), IsOk());
  ModelLoadOptions f32;
  f32.compute_dtype = torch::kFloat32;
  LoadedModel encoder = load_test_model(tmp_.path("clip"), f32);
  ASSERT_NE(encoder.get<Model>(), nullptr);
  const int64_t h = clip.hidden_size;
  LoraTensors tensors = kohya_module("lora_te1_text_model_encoder_layers_0_self_attn_q_proj", h, h, 4, 1);
  const LoraTensors t5 = kohya_module("lora_te2_encoder_block_0_layer_0_SelfAttention_q", 32, 32, 4, 3);
  tensors.insert(tensors.end(), t5.begin(), t5.end());
  const std::vector<WeightedLoraAdapter> bf16 = {{adapter("bf16.safetensors", tensors, "flux", torch::kBFloat16)}};
  const std::vector<WeightedLoraAdapter> same = {{adapter("f32.safetensors", tensors, "flux", torch::kFloat32)}};
  // CLIP's one module, rank 4: A [4, h] and B [h, 4] as float32.
  EXPECT_EQ(AdapterSet::text_encoder_conversion_bytes(*encoder.get<Model>(), bf16, "text_encoder"), 2 * 4 * h * 4);
  EXPECT_EQ(AdapterSet::text_encoder_conversion_bytes(*encoder.get<Model>(), same, "text_encoder"), 0);
  EXPECT_EQ(AdapterSet::text_encoder_conversion_bytes(*encoder.get<Model>(), bf16, "text_encoder_3"), 0);
}

}  // namespace
}  // namespace diffusiond
