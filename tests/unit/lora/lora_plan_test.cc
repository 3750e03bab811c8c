// Reading adapter files: the layouts, the scales, and every file that must
// be refused before anything is applied (another architecture, keys that
// map to nothing, DoRA, shapes that disagree, NaN, a truncated file).
#include "core/lora/lora_plan.h"

#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/checkpoint/safetensors_writer.h"
#include "core/lora/lora_adapter.h"
#include "core/lora/lora_file.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

using LoraTensors = std::vector<std::pair<std::string, torch::Tensor>>;

// Writes `tensors` (float32 or bfloat16) as a safetensors file.
std::string write_lora_file(const TempDir& tmp, const std::string& name, const LoraTensors& tensors,
                            const std::map<std::string, std::string>& metadata = {}) {
  const std::string path = tmp.path(name);
  std::vector<TensorSpec> specs;
  for (const auto& [key, t] : tensors) {
    specs.push_back({key, t.scalar_type() == torch::kBFloat16 ? DType::kBF16 : DType::kF32, t.sizes().vec()});
  }
  absl::StatusOr<std::unique_ptr<SafetensorsWriter>> w = SafetensorsWriter::create(path, specs, metadata);
  EXPECT_THAT(w, IsOk());
  if (!w.ok()) return path;
  for (const auto& [key, t] : tensors) {
    const torch::Tensor c = t.contiguous();
    EXPECT_THAT((*w)->append(static_cast<const char*>(c.data_ptr()), c.nbytes()), IsOk());
  }
  EXPECT_THAT((*w)->close(), IsOk());
  return path;
}

torch::Tensor lora_values(std::vector<int64_t> shape, float v = 0.25f) { return torch::full(shape, v); }

// One module's A, B (rank 4, 64 -> 64) and, when alpha > 0, its alpha.
LoraTensors lora_module_tensors(const std::string& stem, const std::string& down, const std::string& up,
                                double alpha = 0, int64_t out = 64) {
  LoraTensors t = {{stem + down, lora_values({4, 64})}, {stem + up, lora_values({out, 4})}};
  if (alpha > 0) t.push_back({stem + ".alpha", torch::full({}, alpha)});
  return t;
}

LoraTensors concat_tensors(std::vector<LoraTensors> parts) {
  LoraTensors out;
  for (LoraTensors& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

absl::StatusOr<LoraPlan> plan_file(const std::string& path, absl::string_view architecture,
                                   std::unique_ptr<LoraFile>* keep) {
  absl::StatusOr<std::unique_ptr<LoraFile>> file = LoraFile::open(path);
  if (!file.ok()) return file.status();
  *keep = std::move(*file);
  return plan_lora(**keep, architecture);
}

absl::StatusOr<LoraPlan> plan_file(const std::string& path, absl::string_view architecture) {
  std::unique_ptr<LoraFile> file;
  return plan_file(path, architecture, &file);
}

class LoraPlanTest : public ::testing::Test {
 protected:
  TempDir tmp_;
};

TEST_F(LoraPlanTest, AdapterForAnotherArchitectureSaysWhichItIs) {
  const std::string path = write_lora_file(
      tmp_, "flux.safetensors",
      concat_tensors(
          {lora_module_tensors("lora_unet_double_blocks_0_img_attn_proj", ".lora_down.weight", ".lora_up.weight", 4),
           lora_module_tensors("lora_unet_single_blocks_0_linear2", ".lora_down.weight", ".lora_up.weight", 4)}));
  EXPECT_THAT(plan_file(path, "z-image"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("an adapter for flux, not z-image"), HasSubstr("flux.safetensors"),
                             HasSubstr("lora_unet_double_blocks_0_img_attn_proj"))));
  EXPECT_THAT(plan_file(path, "flux"), IsOk());
}

TEST_F(LoraPlanTest, UnmappableKeysAreRefusedByNameInABoundedList) {
  LoraTensors t = lora_module_tensors("transformer.layers.0.attention.to_q", ".lora_A.weight", ".lora_B.weight");
  for (int i = 0; i < 20; ++i) {
    LoraTensors bad = lora_module_tensors(absl::StrCat("transformer.nonsense_", i), ".lora_A.weight", ".lora_B.weight");
    t.insert(t.end(), bad.begin(), bad.end());
  }
  const absl::StatusOr<LoraPlan> p = plan_file(write_lora_file(tmp_, "odd.safetensors", t), "z-image");
  EXPECT_THAT(p, StatusIs(absl::StatusCode::kInvalidArgument,
                          AllOf(HasSubstr("modules that are no z-image linear"), HasSubstr("transformer.nonsense_0"),
                                HasSubstr("and 12 more"), Not(HasSubstr("an adapter for")))));
}

TEST_F(LoraPlanTest, UnsupportedArchitectureIsRefused) {
  const std::string path = write_lora_file(
      tmp_, "a.safetensors", lora_module_tensors("transformer.proj_out", ".lora_A.weight", ".lora_B.weight"));
  EXPECT_THAT(plan_file(path, "vae"), StatusIs(absl::StatusCode::kInvalidArgument,
                                               AllOf(HasSubstr("'vae'"), HasSubstr("flux, z-image, qwen-image, wan"))));
}

// Upstream drops dora_scale and loads the rest as plain LoRA: a different
// model than the one trained. Refused, naming the key.
TEST_F(LoraPlanTest, DoraIsRefusedNamingTheKey) {
  LoraTensors kohya =
      lora_module_tensors("lora_unet_double_blocks_0_img_attn_proj", ".lora_down.weight", ".lora_up.weight", 4);
  kohya.push_back({"lora_unet_double_blocks_0_img_attn_proj.dora_scale", lora_values({1, 64})});
  EXPECT_THAT(plan_file(write_lora_file(tmp_, "dora.safetensors", kohya), "flux"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("DoRA"), HasSubstr("lora_unet_double_blocks_0_img_attn_proj.dora_scale"))));

  LoraTensors peft = lora_module_tensors("transformer.blocks.0.attn1.to_q", ".lora_A.weight", ".lora_B.weight");
  peft.push_back({"transformer.blocks.0.attn1.to_q.lora_magnitude_vector", lora_values({64})});
  EXPECT_THAT(plan_file(write_lora_file(tmp_, "peft_dora.safetensors", peft), "wan"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("blocks.0.attn1.to_q.lora_magnitude_vector")));

  const std::string flagged =
      write_lora_file(tmp_, "flag.safetensors",
                      lora_module_tensors("transformer.blocks.0.attn1.to_q", ".lora_A.weight", ".lora_B.weight"),
                      {{"lora_adapter_metadata", R"({"transformer.r": 4, "transformer.use_dora": true})"}});
  EXPECT_THAT(plan_file(flagged, "wan"), StatusIs(absl::StatusCode::kInvalidArgument,
                                                  AllOf(HasSubstr("DoRA"), HasSubstr("transformer.use_dora"))));
}

TEST_F(LoraPlanTest, KeysOfNoLayoutMixedLayoutsAndDiffsAreRefused) {
  LoraTensors t = lora_module_tensors("transformer.blocks.0.attn1.to_q", ".lora_A.weight", ".lora_B.weight");
  t.push_back({"blocks.0.attn1.to_k.lora_A.weight", lora_values({4, 64})});
  EXPECT_THAT(plan_file(write_lora_file(tmp_, "nolayout.safetensors", t), "wan"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("no LoRA layout"), HasSubstr("blocks.0.attn1.to_k.lora_A.weight"))));

  const LoraTensors mixed = concat_tensors(
      {lora_module_tensors("transformer.blocks.0.attn1.to_q", ".lora_A.weight", ".lora_B.weight"),
       lora_module_tensors("lora_unet_blocks_0_self_attn_k", ".lora_down.weight", ".lora_up.weight", 4)});
  EXPECT_THAT(plan_file(write_lora_file(tmp_, "mixed.safetensors", mixed), "wan"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("mixes LoRA layouts"), HasSubstr("diffusers"), HasSubstr("kohya"))));

  LoraTensors diff = lora_module_tensors("diffusion_model.blocks.0.self_attn.q", ".lora_A.weight", ".lora_B.weight", 4);
  diff.push_back({"diffusion_model.blocks.0.self_attn.q.diff_b", lora_values({64})});
  EXPECT_THAT(plan_file(write_lora_file(tmp_, "diff.safetensors", diff), "wan"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("no LoRA A, B or alpha"), HasSubstr("self_attn.q.diff_b"))));
}

TEST_F(LoraPlanTest, MalformedModulesAreRefused) {
  const LoraTensors no_up = {{"transformer.blocks.0.attn1.to_q.lora_A.weight", lora_values({4, 64})}};
  EXPECT_THAT(plan_file(write_lora_file(tmp_, "no_up.safetensors", no_up), "wan"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("transformer.blocks.0.attn1.to_q' has 1 lora_down/lora_A, 0 lora_up"))));

  const LoraTensors ranks = {{"transformer.blocks.0.attn1.to_q.lora_A.weight", lora_values({4, 64})},
                             {"transformer.blocks.0.attn1.to_q.lora_B.weight", lora_values({64, 2})}};
  EXPECT_THAT(plan_file(write_lora_file(tmp_, "ranks.safetensors", ranks), "wan"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("lora_down [4, 64] and lora_up [64, 2]"), HasSubstr("[rank, in]"))));

  LoraTensors alpha = lora_module_tensors("lora_unet_blocks_0_self_attn_q", ".lora_down.weight", ".lora_up.weight");
  alpha.push_back({"lora_unet_blocks_0_self_attn_q.alpha", lora_values({2})});
  EXPECT_THAT(plan_file(write_lora_file(tmp_, "alpha.safetensors", alpha), "wan"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("alpha of shape [2], expected one value")));

  const std::string meta =
      write_lora_file(tmp_, "meta.safetensors",
                      lora_module_tensors("transformer.blocks.0.attn1.to_q", ".lora_A.weight", ".lora_B.weight"),
                      {{"lora_adapter_metadata", R"({"transformer.r": 8, "transformer.lora_alpha": 8})"}});
  EXPECT_THAT(plan_file(meta, "wan"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'transformer.blocks.0.attn1.to_q' has rank 4, but the metadata "
                                 "says r = 8")));

  const std::string regex = write_lora_file(
      tmp_, "regex.safetensors",
      lora_module_tensors("transformer.blocks.0.attn1.to_q", ".lora_A.weight", ".lora_B.weight"),
      {{"lora_adapter_metadata", R"({"transformer.r": 4, "transformer.alpha_pattern": {"blocks\\.[0-9]+": 2}})"}});
  EXPECT_THAT(plan_file(regex, "wan"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is a regular expression")));
}

TEST_F(LoraPlanTest, TruncatedAndEmptyFilesAreRefused) {
  const std::string path =
      write_lora_file(tmp_, "cut.safetensors",
                      lora_module_tensors("transformer.blocks.0.attn1.to_q", ".lora_A.weight", ".lora_B.weight"));
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 100);
  EXPECT_THAT(LoraFile::open(path), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("cut.safetensors")));

  EXPECT_THAT(plan_file(write_lora_file(tmp_, "empty.safetensors", {}), "wan"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("holds no tensors")));

  const std::string bad_meta =
      write_lora_file(tmp_, "bad_meta.safetensors",
                      lora_module_tensors("transformer.blocks.0.attn1.to_q", ".lora_A.weight", ".lora_B.weight"),
                      {{"lora_adapter_metadata", "[1, 2]"}});
  EXPECT_THAT(LoraFile::open(bad_meta), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a JSON object")));
}

TEST_F(LoraPlanTest, NanAndInfinityAreRefusedAtLoadNamingTheTensor) {
  LoraTensors t = lora_module_tensors("transformer.blocks.0.attn1.to_q", ".lora_A.weight", ".lora_B.weight");
  t[1].second = t[1].second.clone();
  t[1].second[3][2] = std::nanf("");
  const std::string nan = write_lora_file(tmp_, "nan.safetensors", t);
  std::unique_ptr<LoraFile> file;
  absl::StatusOr<LoraPlan> p = plan_file(nan, "wan", &file);
  ASSERT_THAT(p, IsOk());
  EXPECT_THAT(
      LoraAdapter::load(*file, *p, torch::kFloat32),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("'transformer.blocks.0.attn1.to_q.lora_B.weight'"), HasSubstr("NaN or an infinity"))));

  LoraTensors alpha =
      lora_module_tensors("diffusion_model.blocks.0.self_attn.q", ".lora_down.weight", ".lora_up.weight");
  alpha.push_back({"diffusion_model.blocks.0.self_attn.q.alpha", torch::full({}, INFINITY)});
  EXPECT_THAT(LoraAdapter::read(write_lora_file(tmp_, "inf.safetensors", alpha), "wan", torch::kFloat32),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("self_attn.q.alpha' holds a NaN or an infinity")));

  // Finite in float32, infinite in bfloat16.
  LoraTensors big = lora_module_tensors("transformer.blocks.0.attn1.to_q", ".lora_A.weight", ".lora_B.weight");
  big[0].second = lora_values({4, 64}, std::numeric_limits<float>::max());
  EXPECT_THAT(LoraAdapter::read(write_lora_file(tmp_, "big.safetensors", big), "wan", torch::kBFloat16),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflows the compute dtype bfloat16")));
}

// scale = alpha / rank: the file's alpha tensor, else the metadata's
// lora_alpha (pattern first; / √r with rsLoRA), else alpha = rank.
TEST_F(LoraPlanTest, ScalesFollowAlphaTensorsThenMetadataThenRank) {
  const LoraTensors kohya = concat_tensors(
      {lora_module_tensors("lora_unet_blocks_0_self_attn_q", ".lora_down.weight", ".lora_up.weight", 2.0),
       lora_module_tensors("lora_unet_blocks_0_self_attn_k", ".lora_down.weight", ".lora_up.weight")});
  absl::StatusOr<std::unique_ptr<LoraAdapter>> a =
      LoraAdapter::read(write_lora_file(tmp_, "kohya.safetensors", kohya), "wan", torch::kFloat32);
  ASSERT_THAT(a, IsOk());
  ASSERT_EQ((*a)->modules().size(), 2u);
  std::map<std::string, double> scales;
  for (const LoraModule& m : (*a)->modules()) scales[m.modules.at(0)] = m.scale;
  EXPECT_EQ(scales.at("blocks.0.attn1.to_q"), 0.5);
  EXPECT_EQ(scales.at("blocks.0.attn1.to_k"), 1.0);
  EXPECT_EQ((*a)->format(), LoraFormat::kKohya);

  const LoraTensors peft =
      concat_tensors({lora_module_tensors("transformer.blocks.0.attn1.to_q", ".lora_A.weight", ".lora_B.weight"),
                      lora_module_tensors("transformer.blocks.1.attn1.to_q", ".lora_A.weight", ".lora_B.weight")});
  a = LoraAdapter::read(write_lora_file(tmp_, "peft.safetensors", peft,
                                        {{"lora_adapter_metadata",
                                          R"({"transformer.r": 4, "transformer.lora_alpha": 8.0,
                                         "transformer.alpha_pattern": {"1.attn1.to_q": 2.0},
                                         "transformer.use_rslora": true})"}}),
                        "wan", torch::kFloat32);
  ASSERT_THAT(a, IsOk());
  scales.clear();
  for (const LoraModule& m : (*a)->modules()) scales[m.modules.at(0)] = m.scale;
  EXPECT_DOUBLE_EQ(scales.at("blocks.0.attn1.to_q"), 8.0 / 2.0);
  EXPECT_DOUBLE_EQ(scales.at("blocks.1.attn1.to_q"), 2.0 / 2.0);

  // Upstream lets the metadata win over an alpha tensor silently.
  LoraTensors both = lora_module_tensors("transformer.blocks.0.attn1.to_q", ".lora_A.weight", ".lora_B.weight", 3.0);
  EXPECT_THAT(
      LoraAdapter::read(write_lora_file(tmp_, "both.safetensors", both,
                                        {{"lora_adapter_metadata", R"({"transformer.lora_alpha": 8.0})"}}),
                        "wan", torch::kFloat32),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("has alpha 3, but the metadata says lora_alpha = 8")));
}

// Qwen-Image upstream drops the alphas of lora_A/lora_B ComfyUI files
// (scale 1); they are applied here.
TEST_F(LoraPlanTest, ComfyUiLoraAWithAlphaKeepsItsAlpha) {
  const LoraTensors t =
      lora_module_tensors("diffusion_model.transformer_blocks.0.attn.to_q", ".lora_A.weight", ".lora_B.weight", 1.0);
  absl::StatusOr<std::unique_ptr<LoraAdapter>> a =
      LoraAdapter::read(write_lora_file(tmp_, "qwen.safetensors", t), "qwen-image", torch::kFloat32);
  ASSERT_THAT(a, IsOk());
  ASSERT_EQ((*a)->modules().size(), 1u);
  EXPECT_EQ((*a)->modules()[0].scale, 0.25);
}

// Text-encoder modules are kept and listed, never mapped onto the
// denoiser; bytes() counts them.
TEST_F(LoraPlanTest, TextEncoderModulesAreKeptAndListed) {
  const LoraTensors t = concat_tensors(
      {lora_module_tensors("diffusion_model.double_blocks.0.img_attn.proj", ".lora_down.weight", ".lora_up.weight", 4),
       lora_module_tensors("text_encoders.clip_l.transformer.text_model.encoder.layers.0.self_attn.q_proj",
                           ".lora_down.weight", ".lora_up.weight", 4),
       lora_module_tensors("text_encoders.t5xxl.transformer.encoder.block.0.layer.0.SelfAttention.q",
                           ".lora_down.weight", ".lora_up.weight")});
  std::unique_ptr<LoraFile> file;
  absl::StatusOr<LoraPlan> p = plan_file(write_lora_file(tmp_, "te.safetensors", t), "flux", &file);
  ASSERT_THAT(p, IsOk());
  EXPECT_EQ(p->format, LoraFormat::kComfyUi);
  ASSERT_EQ(p->modules.size(), 1u);
  EXPECT_EQ(p->modules[0].target.modules, std::vector<std::string>{"transformer_blocks.0.attn.to_out.0"});
  ASSERT_EQ(p->text_encoder_modules.size(), 2u);
  std::map<std::string, std::string> encoders;
  for (const PlannedLoraModule& m : p->text_encoder_modules) encoders[m.text_encoder] = m.target.modules.at(0);
  EXPECT_EQ(encoders.at("clip_l"), "text_model.encoder.layers.0.self_attn.q_proj");
  EXPECT_EQ(encoders.at("t5xxl"), "encoder.block.0.layer.0.SelfAttention.q");
  EXPECT_EQ(p->bytes(torch::kFloat32), 3 * (4 * 64 + 64 * 4) * 4);
  EXPECT_EQ(p->bytes(torch::kBFloat16), 3 * (4 * 64 + 64 * 4) * 2);

  absl::StatusOr<std::unique_ptr<LoraAdapter>> a = LoraAdapter::load(*file, *p, torch::kFloat32);
  ASSERT_THAT(a, IsOk());
  EXPECT_EQ((*a)->text_encoder_modules().size(), 2u);
  EXPECT_EQ((*a)->nbytes(), p->bytes(torch::kFloat32));
}

// FLUX's original final modulation is [shift; scale], diffusers'
// [scale; shift]: lora_up's halves swap (and an odd count is refused).
TEST_F(LoraPlanTest, FluxFinalModulationSwapsHalves) {
  torch::Tensor up = torch::arange(8, torch::kFloat32).view({8, 1}).expand({8, 4}).contiguous();
  const LoraTensors t = {{"lora_unet_final_layer_adaLN_modulation_1.lora_down.weight", lora_values({4, 64})},
                         {"lora_unet_final_layer_adaLN_modulation_1.lora_up.weight", up}};
  absl::StatusOr<std::unique_ptr<LoraAdapter>> a =
      LoraAdapter::read(write_lora_file(tmp_, "final.safetensors", t), "flux", torch::kFloat32);
  ASSERT_THAT(a, IsOk());
  ASSERT_EQ((*a)->modules().size(), 1u);
  EXPECT_TRUE(torch::equal((*a)->modules()[0].up, torch::cat({up.narrow(0, 4, 4), up.narrow(0, 0, 4)})));

  const LoraTensors odd = {{"lora_unet_final_layer_adaLN_modulation_1.lora_down.weight", lora_values({4, 64})},
                           {"lora_unet_final_layer_adaLN_modulation_1.lora_up.weight", lora_values({7, 4})}};
  EXPECT_THAT(LoraAdapter::read(write_lora_file(tmp_, "odd.safetensors", odd), "flux", torch::kFloat32),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("lora_up of 7 rows")));
}

// The layouts the fixture's trap probes (stats.json "trap_probes") push
// through upstream, where upstream raises, drops a module or leaves it
// matching nothing: each maps here, with its alpha, or is refused by name.
TEST_F(LoraPlanTest, UpstreamsTrapProbesMapOrAreRefused) {
  const auto probe = [&](const std::string& name, absl::string_view architecture, const LoraTensors& tensors) {
    return LoraAdapter::read(write_lora_file(tmp_, name + ".safetensors", tensors), architecture, torch::kFloat32);
  };
  const auto targets = [](const LoraAdapter& a) {
    std::map<std::string, double> out;  // first module -> scale
    for (const LoraModule& m : a.modules()) {
      for (const std::string& module : m.modules) out[module] = m.scale;
    }
    return out;
  };
  const auto rank2 = [](const std::string& stem, const std::string& down, const std::string& up, double alpha,
                        int64_t out = 8) {
    LoraTensors t = {{stem + down, lora_values({2, 8})}, {stem + up, lora_values({out, 2})}};
    if (alpha > 0) t.push_back({stem + ".alpha", torch::full({}, alpha)});
    return t;
  };
  using Map = std::map<std::string, double>;

  // Upstream: ValueError (the alpha is left over).
  absl::StatusOr<std::unique_ptr<LoraAdapter>> a =
      probe("z1", "z-image", rank2("lora_unet_layers_0_attention_out", ".lora_down.weight", ".lora_up.weight", 1));
  ASSERT_THAT(a, IsOk());
  EXPECT_EQ(targets(**a), (Map{{"layers.0.attention.to_out.0", 0.5}}));
  // Upstream: converts only to_q; attention_out is lost.
  a = probe("z2", "z-image",
            concat_tensors({rank2("lora_unet_layers_0_attention_out", ".lora_down.weight", ".lora_up.weight", 0),
                            rank2("lora_unet_layers_0_attention_to_q", ".lora_down.weight", ".lora_up.weight", 0)}));
  ASSERT_THAT(a, IsOk());
  EXPECT_EQ(targets(**a), (Map{{"layers.0.attention.to_out.0", 1}, {"layers.0.attention.to_q", 1}}));
  // Upstream: "attention.out" / "attention.qkv", which match no module.
  a = probe("z3", "z-image", rank2("diffusion_model.layers.0.attention.out", ".lora_A.weight", ".lora_B.weight", 0));
  ASSERT_THAT(a, IsOk());
  EXPECT_EQ(targets(**a), (Map{{"layers.0.attention.to_out.0", 1}}));
  a = probe("z4", "z-image",
            rank2("diffusion_model.layers.0.attention.qkv", ".lora_A.weight", ".lora_B.weight", 1, /*out=*/24));
  ASSERT_THAT(a, IsOk());
  EXPECT_EQ(
      targets(**a),
      (Map{{"layers.0.attention.to_q", 0.5}, {"layers.0.attention.to_k", 0.5}, {"layers.0.attention.to_v", 0.5}}));
  // Upstream: KeyError for the missing alpha; kohya's default is alpha = rank.
  a = probe("q1", "qwen-image",
            rank2("lora_unet_transformer_blocks_0_attn_to_q", ".lora_down.weight", ".lora_up.weight", 0));
  ASSERT_THAT(a, IsOk());
  EXPECT_EQ(targets(**a), (Map{{"transformer_blocks.0.attn.to_q", 1}}));
  // Upstream: KeyError unless every block has every module.
  a = probe("w1", "wan", rank2("lora_unet_blocks_0_self_attn_q", ".lora_down.weight", ".lora_up.weight", 1));
  ASSERT_THAT(a, IsOk());
  EXPECT_EQ(targets(**a), (Map{{"blocks.0.attn1.to_q", 0.5}}));
  // Upstream: raises in its converter; here refused naming the key.
  LoraTensors dora = rank2("diffusion_model.blocks.0.self_attn.q", ".lora_A.weight", ".lora_B.weight", 0);
  dora.push_back({"diffusion_model.blocks.0.self_attn.q.dora_scale", lora_values({1, 8})});
  EXPECT_THAT(probe("w2", "wan", dora), StatusIs(absl::StatusCode::kInvalidArgument,
                                                 HasSubstr("diffusion_model.blocks.0.self_attn.q.dora_scale")));
  // Upstream: left as "diffusion_model.double_blocks..." keys, applied to nothing.
  a = probe("f1", "flux",
            rank2("diffusion_model.double_blocks.0.img_attn.proj", ".lora_A.weight", ".lora_B.weight", 0));
  ASSERT_THAT(a, IsOk());
  EXPECT_EQ(targets(**a), (Map{{"transformer_blocks.0.attn.to_out.0", 1}}));
  // Upstream: AssertionError (FLUX.1's hard-coded part sizes); here the
  // model's own sizes split B when attached (adapter_set_test.cc).
  a = probe("f2", "flux",
            rank2("lora_unet_single_blocks_0_linear1", ".lora_down.weight", ".lora_up.weight", 2, /*out=*/40));
  ASSERT_THAT(a, IsOk());
  EXPECT_EQ((*a)->modules().at(0).modules.size(), 4u);
  EXPECT_EQ((*a)->modules().at(0).scale, 1);
  // Upstream: its network alpha is used (lora_alpha = 1, r = 2); the same here.
  a = probe("f3", "flux",
            rank2("transformer.transformer_blocks.0.attn.to_out.0", ".lora_A.weight", ".lora_B.weight", 1));
  ASSERT_THAT(a, IsOk());
  EXPECT_EQ(targets(**a), (Map{{"transformer_blocks.0.attn.to_out.0", 0.5}}));
}

}  // namespace
}  // namespace diffusiond
