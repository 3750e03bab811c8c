// Parity of the Anima ports with upstream diffusers on the reference
// fixture DIFFUSIOND_ANIMA_FIXTURE (default anima-tiny): the text
// conditioner (AnimaTextConditioner: one prompt, a padded batch, the empty
// negative prompt whose every Qwen key is masked, its intermediates and
// RoPE tables, its FP8 folder), the Cosmos transformer (the forward from
// the diffusers folder and from the community single file, batched, with a
// non-zero padding mask, its intermediates and RoPE tables, the FP8 folder
// and selection, Step), the single file split into both models with each
// tensor read once, and the 4-step CFG loop through denoise(). Sizes come
// from the fixture's files, so another fixture of the same layout passes
// unchanged.
//
// Tolerance: 1e-5 absolute. The fixture's float32 noise floor (the float64
// reruns against the float32 one) is ~9e-7 on outputs of magnitude ~2-3 and
// 1.6e-6 after the loop; a real mistake (patchify's channel order reused
// for unpatchify, the mask channel first, the context padding masked, the
// sinusoid of sigma * 1000, NaN from an empty negative) moves outputs by
// 1e-2 or more.
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "core/checkpoint/dtype.h"
#include "core/denoise/denoise_loop.h"
#include "core/models/anima_conditioner/anima_conditioner_model.h"
#include "core/models/anima_conditioner/anima_conditioner_params.h"
#include "core/models/cosmos/cosmos_model.h"
#include "core/models/cosmos/cosmos_params.h"
#include "core/models/cosmos/cosmos_rope.h"
#include "core/models/model_family.h"
#include "core/models/model_loader.h"
#include "core/precision/precision_policy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/loaded_model.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tensor_file.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::load_test_model;
using ::diffusiond::testing::LoadedModel;
using ::diffusiond::testing::max_abs_diff;
using ::diffusiond::testing::read_json_file;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::diffusiond::testing::TensorFile;
using ::testing::HasSubstr;

constexpr double kAnimaTolerance = 1e-5;

std::string anima_dir() { return ::diffusiond::testing::fixture_folder("DIFFUSIOND_ANIMA_FIXTURE", "anima-tiny"); }

// A diffusers model folder at `folder`: `config` and the weights file
// `weights`, symlinked (the fixture keeps FP8 twins without a config).
std::string anima_model_folder(const std::string& folder, const std::string& config, const std::string& weights) {
  std::filesystem::create_directories(folder);
  std::filesystem::create_symlink(config, folder + "/config.json");
  std::filesystem::create_symlink(weights, folder + "/diffusion_pytorch_model.safetensors");
  return folder;
}

class AnimaParity : public ::testing::Test {
 protected:
  std::string dir() const { return anima_dir(); }

  LoadedModel load_transformer(const ModelLoadOptions& options = {}, const char* weights = "transformer") {
    LoadedModel l = load_test_model(
        ::diffusiond::testing::fixture_model_folder(tmp_.path(std::string("t_") + weights), dir() + "/config.json",
                                                    dir() + "/" + weights + "/diffusion_pytorch_model.safetensors",
                                                    dir() + "/scheduler_config.json"),
        options);
    EXPECT_NE(l.get<CosmosModel>(), nullptr);
    return l;
  }
  LoadedModel load_conditioner(const ModelLoadOptions& options = {}, const char* weights = "text_conditioner") {
    LoadedModel l = load_test_model(anima_model_folder(tmp_.path(std::string("c_") + weights),
                                                       dir() + "/text_conditioner/config.json",
                                                       dir() + "/" + weights + "/diffusion_pytorch_model.safetensors"),
                                    options);
    EXPECT_NE(l.get<AnimaConditionerModel>(), nullptr);
    return l;
  }

  // The conditioner's forward on the fixture's inputs `prefix`.* (ids and
  // masks stored as float).
  torch::Tensor condition(const AnimaConditionerModel& m, const std::string& prefix,
                          AnimaConditionerIntermediates* debug = nullptr) {
    absl::StatusOr<torch::Tensor> out =
        m.forward(io_.get(prefix + "qwen_embeds"), io_.get(prefix + "t5_ids").to(torch::kInt64),
                  io_.get(prefix + "t5_mask"), io_.get(prefix + "qwen_mask"), debug);
    EXPECT_THAT(out, IsOk());
    return out.ok() ? *out : torch::zeros({1});
  }
  torch::Tensor transformer(const CosmosModel& m, const std::string& prefix, const std::string& text,
                            const std::string& mask, CosmosIntermediates* debug = nullptr) {
    absl::StatusOr<torch::Tensor> out = m.forward(io_.get(prefix + ".hidden_states"), io_.get(prefix + ".timestep"),
                                                  io_.get(text), io_.get(mask), debug);
    EXPECT_THAT(out, IsOk());
    return out.ok() ? *out : torch::zeros({1});
  }

  void expect_near(const char* what, const torch::Tensor& ours, const torch::Tensor& want,
                   double tolerance = kAnimaTolerance) {
    ASSERT_EQ(ours.sizes(), want.sizes()) << what;
    const double diff = max_abs_diff(ours, want);
    std::printf("%s: max abs diff %.3g\n", what, diff);
    EXPECT_LT(diff, tolerance) << what;
  }

  TempDir tmp_;
  TensorFile io_{dir() + "/io.safetensors"};
  nlohmann::json stats_ = read_json_file(dir() + "/stats.json");
};

TEST_F(AnimaParity, ConditionerOutputs) {
  LoadedModel l = load_conditioner();
  const AnimaConditionerModel* m = l.get<AnimaConditionerModel>();
  ASSERT_NE(m, nullptr);
  expect_near("cond.out", condition(*m, "cond."), io_.get("cond.out"));
  expect_near("cond.batch_out (padded batch)", condition(*m, "cond.batch_"), io_.get("cond.batch_out"));
  // The empty negative: every Qwen key masked gives 0, not NaN.
  const torch::Tensor neg = condition(*m, "cond.neg_");
  EXPECT_FALSE(neg.isnan().any().item<bool>());
  expect_near("cond.neg_out (every source key masked)", neg, io_.get("cond.neg_out"));
}

TEST_F(AnimaParity, ConditionerIntermediatesAndRope) {
  LoadedModel l = load_conditioner();
  const AnimaConditionerModel* m = l.get<AnimaConditionerModel>();
  ASSERT_NE(m, nullptr);
  AnimaConditionerIntermediates dbg;
  condition(*m, "cond.", &dbg);
  expect_near("cdbg.embed", dbg.embed, io_.get("cdbg.embed"));
  EXPECT_EQ(max_abs_diff(dbg.rope_target_cos, io_.get("cdbg.rope_target_cos")), 0.0);
  EXPECT_EQ(max_abs_diff(dbg.rope_target_sin, io_.get("cdbg.rope_target_sin")), 0.0);
  EXPECT_EQ(max_abs_diff(dbg.rope_source_cos, io_.get("cdbg.rope_source_cos")), 0.0);
  EXPECT_EQ(max_abs_diff(dbg.rope_source_sin, io_.get("cdbg.rope_source_sin")), 0.0);
  expect_near("cdbg.block0_self_attn", dbg.block0_self_attn, io_.get("cdbg.block0_self_attn"));
  expect_near("cdbg.block0_cross_attn", dbg.block0_cross_attn, io_.get("cdbg.block0_cross_attn"));
  for (size_t i = 0; i < dbg.blocks.size(); ++i) {
    const std::string name = "cdbg.block" + std::to_string(i);
    expect_near(name.c_str(), dbg.blocks[i], io_.get(name));
  }
  expect_near("cdbg.out_proj", dbg.out_proj, io_.get("cdbg.out_proj"));
  expect_near("cdbg.norm", dbg.norm, io_.get("cdbg.norm"));
}

// The role's own call: the prompt's target ids given, as Step takes them,
// and the Qwen rows of the one prompt.
TEST_F(AnimaParity, ConditionerStepAndRole) {
  LoadedModel l = load_conditioner();
  const AnimaConditionerModel* m = l.get<AnimaConditionerModel>();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->role(), ModelRole::kTextConditioner);
  const NamedTensors in = {{"source_hidden_states", io_.get("cond.qwen_embeds")},
                           {"target_input_ids", io_.get("cond.t5_ids").to(torch::kInt64)},
                           {"target_attention_mask", io_.get("cond.t5_mask")},
                           {"source_attention_mask", io_.get("cond.qwen_mask")}};
  absl::StatusOr<NamedTensors> out = m->step(in);
  ASSERT_THAT(out, IsOk());
  expect_near("Step out", out->at("out"), io_.get("cond.out"));
  EXPECT_GT(m->step_activations(in, true).bytes, 0);
  NamedTensors extra = in;
  extra["timestep"] = torch::ones({1});
  EXPECT_THAT(m->step(extra), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unexpected input \"timestep\"")));
  NamedTensors bad_ids = in;
  bad_ids["target_input_ids"] = torch::full({1, 3}, m->config().target_vocab_size, torch::kInt64);
  bad_ids.erase("target_attention_mask");
  EXPECT_THAT(m->step(bad_ids), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("vocabulary")));
  // Without a tokenizer (the fixture's folder has none) a prompt is refused.
  ConditionerRequest request;
  request.text = "a cat";
  request.source_hidden_states = io_.get("cond.qwen_embeds")[0];
  request.source_mask = io_.get("cond.qwen_mask")[0];
  EXPECT_THAT(m->condition(request), StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("tokenizer")));
}

TEST_F(AnimaParity, ConditionerFp8Folder) {
  LoadedModel l = load_conditioner({}, "text_conditioner_fp8");
  const AnimaConditionerModel* m = l.get<AnimaConditionerModel>();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->weights().fp8_count(), static_cast<int64_t>(stats_["cond_fp8"]["cast"].size()));
  expect_near("fp8.cond_out", condition(*m, "cond."), io_.get("fp8.cond_out"));
}

TEST_F(AnimaParity, TransformerForwards) {
  LoadedModel l = load_transformer();
  const CosmosModel* m = l.get<CosmosModel>();
  ASSERT_NE(m, nullptr);
  expect_near("fwd.out", transformer(*m, "fwd", "cond.out", "fwd.padding_mask"), io_.get("fwd.out"));
  expect_near("batch.out", transformer(*m, "batch", "cond.batch_out", "fwd.padding_mask"), io_.get("batch.out"));
  // A non-zero mask: resized by nearest neighbour, the 17th channel.
  expect_near("pad.out", transformer(*m, "fwd", "cond.out", "pad.padding_mask"), io_.get("pad.out"));
  // No mask at all is the pipeline's zeros.
  absl::StatusOr<torch::Tensor> unmasked =
      m->forward(io_.get("fwd.hidden_states"), io_.get("fwd.timestep"), io_.get("cond.out"));
  ASSERT_THAT(unmasked, IsOk());
  expect_near("fwd.out without a mask", *unmasked, io_.get("fwd.out"));
}

TEST_F(AnimaParity, TransformerIntermediatesAndRope) {
  LoadedModel l = load_transformer();
  const CosmosModel* m = l.get<CosmosModel>();
  ASSERT_NE(m, nullptr);
  CosmosIntermediates dbg;
  transformer(*m, "fwd", "cond.out", "fwd.padding_mask", &dbg);
  EXPECT_EQ(max_abs_diff(dbg.t_sinusoid, io_.get("dbg.t_sinusoid")), 0.0) << "the sinusoid of the raw sigma";
  EXPECT_EQ(max_abs_diff(dbg.rope_cos, io_.get("dbg.rope_cos")), 0.0);
  EXPECT_EQ(max_abs_diff(dbg.rope_sin, io_.get("dbg.rope_sin")), 0.0);
  const std::vector<std::pair<const char*, torch::Tensor>> pairs = {
      {"dbg.embedded_timestep", dbg.embedded_timestep}, {"dbg.temb", dbg.temb},
      {"dbg.patch_embed_in", dbg.patch_embed_in},       {"dbg.patch_embed", dbg.patch_embed},
      {"dbg.block0_norm1", dbg.block0_norm1},           {"dbg.block0_gate1", dbg.block0_gate1},
      {"dbg.block0_attn1", dbg.block0_attn1},           {"dbg.block0_attn2", dbg.block0_attn2},
      {"dbg.norm_out", dbg.norm_out},                   {"dbg.proj_out", dbg.proj_out},
  };
  for (const auto& [name, ours] : pairs) expect_near(name, ours, io_.get(name));
  for (size_t i = 0; i < dbg.blocks.size(); ++i) {
    const std::string name = "dbg.block" + std::to_string(i);
    expect_near(name.c_str(), dbg.blocks[i], io_.get(name));
  }
}

// Past upstream's 128 positions per axis (an image above 2048 px), the
// tables continue arange(n): the first 128 rows are upstream's own.
TEST_F(AnimaParity, RopeTablesExtendPastUpstreamsLimit) {
  absl::StatusOr<CosmosConfig> config = cosmos_config_from_json(read_json_file(dir() + "/config.json"), "config.json");
  ASSERT_THAT(config, IsOk());
  const auto [cos_small, sin_small] = cosmos_rope_tables(*config, 1, 4, 6);
  const auto [cos, sin] = cosmos_rope_tables(*config, 1, 200, 6);
  EXPECT_EQ(cos.size(0), 1200);
  EXPECT_EQ(max_abs_diff(cos.narrow(0, 0, 24), cos_small), 0.0);
  EXPECT_EQ(max_abs_diff(sin.narrow(0, 0, 24), sin_small), 0.0);
  EXPECT_FALSE(cos.isnan().any().item<bool>());
  // Rows 150 and 199 of the h axis differ: positions keep counting.
  EXPECT_GT(max_abs_diff(cos[150 * 6], cos[199 * 6]), 0.0);
}

TEST_F(AnimaParity, TransformerStep) {
  LoadedModel l = load_transformer();
  const CosmosModel* m = l.get<CosmosModel>();
  ASSERT_NE(m, nullptr);
  const NamedTensors in = {{"hidden_states", io_.get("fwd.hidden_states")},
                           {"timestep", io_.get("fwd.timestep")},
                           {"encoder_hidden_states", io_.get("cond.out")},
                           {"padding_mask", io_.get("pad.padding_mask")}};
  absl::StatusOr<NamedTensors> out = m->step(in);
  ASSERT_THAT(out, IsOk());
  expect_near("Step out", out->at("out"), io_.get("pad.out"));
  NamedTensors extra = in;
  extra["guidance"] = torch::ones({1});
  EXPECT_THAT(m->step(extra),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unexpected input \"guidance\" for Cosmos")));
  NamedTensors bad_mask = in;
  bad_mask["padding_mask"] = torch::zeros({2, 1, 64, 96});
  EXPECT_THAT(m->step(bad_mask), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("padding_mask")));
}

TEST_F(AnimaParity, TransformerFp8FolderAndSelection) {
  LoadedModel l = load_transformer({}, "transformer_fp8");
  const CosmosModel* m = l.get<CosmosModel>();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->weights().fp8_count(), static_cast<int64_t>(stats_["fp8"]["cast"].size()));
  expect_near("fp8.out", transformer(*m, "fwd", "cond.out", "fwd.padding_mask"), io_.get("fp8.out"));

  // Our policy with Cosmos' declaration: upstream's cast layers less the
  // time embedder, which the declaration keeps (t_embedder), and nothing
  // upstream skips.
  absl::StatusOr<CosmosConfig> config = cosmos_config_from_json(read_json_file(dir() + "/config.json"), "config.json");
  ASSERT_THAT(config, IsOk());
  Fp8Options fp8;
  fp8.format = Fp8Format::kE4M3Fn;
  absl::StatusOr<PrecisionPolicy> policy = PrecisionPolicy::create(fp8, cosmos_precision_declaration());
  ASSERT_THAT(policy, IsOk());
  std::set<std::string> ours, upstream;
  for (const ParamSpec& p : cosmos_parameter_table(*config)) {
    if (policy->decide(p.name, p.kind).kind == StorageDecision::Kind::kFp8) ours.insert(p.name);
  }
  for (const auto& name : stats_["fp8"]["cast"]) {
    const std::string n = name.get<std::string>();
    if (!absl::StartsWith(n, "time_embed.t_embedder.")) upstream.insert(n);
  }
  EXPECT_FALSE(ours.empty());
  EXPECT_EQ(ours, upstream);
  for (const auto& item : stats_["fp8"]["skipped_layers"].items()) {
    EXPECT_EQ(ours.count(item.key() + ".weight"), 0u) << item.key() << " is skipped upstream (" << item.value() << ")";
  }
}

// FP8 chosen at load from the BF16 weights: the time embedder stays at
// compute precision, so the output is near upstream's float32 forward.
TEST_F(AnimaParity, TransformerFp8AtLoadKeepsTheTimeEmbedder) {
  ModelLoadOptions options;
  options.fp8.format = Fp8Format::kE4M3Fn;
  LoadedModel l = load_transformer(options);
  const CosmosModel* m = l.get<CosmosModel>();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->weights().fp8(std::string("time_embed.t_embedder.linear_1.weight")), nullptr);
  EXPECT_EQ(m->weights().fp8_count(), static_cast<int64_t>(stats_["fp8"]["cast"].size()) - 2);
  const double to_fwd = max_abs_diff(transformer(*m, "fwd", "cond.out", "fwd.padding_mask"), io_.get("fwd.out"));
  std::printf("FP8-at-load forward vs fwd.out %.3g (upstream's cast: %.3g)\n", to_fwd,
              stats_["fp8_vs_fwd"].get<double>());
  EXPECT_LT(to_fwd, 2 * stats_["fp8_vs_fwd"].get<double>() + kAnimaTolerance);
}

// The community single file: the Cosmos family reads the DiT and drops
// the adapter; a config of class AnimaTextConditioner reads the adapter
// alone. Every tensor of the file is read by exactly one of them, and both
// forwards equal the folders'.
TEST_F(AnimaParity, SingleFileSplitsIntoBothModels) {
  const std::string file = dir() + "/single_file.safetensors";
  absl::StatusOr<std::unique_ptr<Checkpoint>> plain = Checkpoint::open(file);
  ASSERT_THAT(plain, IsOk());
  OpenOptions as_conditioner;
  as_conditioner.config_path = dir() + "/text_conditioner/config.json";
  absl::StatusOr<std::unique_ptr<Checkpoint>> named = Checkpoint::open(file, as_conditioner);
  ASSERT_THAT(named, IsOk());
  absl::StatusOr<ModelPlan> dit = plan_model(**plain, {});
  absl::StatusOr<ModelPlan> adapter = plan_model(**named, {});
  ASSERT_THAT(dit, IsOk());
  ASSERT_THAT(adapter, IsOk());
  EXPECT_EQ(dit->family->name(), kCosmosArchitecture);
  EXPECT_EQ(adapter->family->name(), kAnimaConditionerArchitecture);
  std::multiset<std::string> read;
  for (const PlannedTensor& t : dit->plan.tensors) {
    EXPECT_FALSE(absl::StartsWith(t.source->name, "net.llm_adapter.")) << t.source->name;
    read.insert(t.source->name);
  }
  for (const PlannedTensor& t : adapter->plan.tensors) {
    EXPECT_TRUE(absl::StartsWith(t.source->name, "net.llm_adapter.")) << t.source->name;
    read.insert(t.source->name);
  }
  std::multiset<std::string> all;
  for (const TensorRecord& t : (*plain)->tensors()) all.insert(t.name);
  EXPECT_EQ(read, all) << "each tensor read by exactly one model";

  LoadedModel dit_file = load_test_model(file, {});
  LoadedModel dit_folder = load_transformer();
  LoadedModel cond_file = load_test_model(file, {}, dir() + "/text_conditioner/config.json");
  LoadedModel cond_folder = load_conditioner();
  ASSERT_NE(dit_file.get<CosmosModel>(), nullptr);
  ASSERT_NE(cond_file.get<AnimaConditionerModel>(), nullptr);
  ASSERT_NE(dit_folder.get<CosmosModel>(), nullptr);
  ASSERT_NE(cond_folder.get<AnimaConditionerModel>(), nullptr);
  const torch::Tensor c_file = condition(*cond_file.get<AnimaConditionerModel>(), "cond.");
  EXPECT_EQ(max_abs_diff(c_file, condition(*cond_folder.get<AnimaConditionerModel>(), "cond.")), 0.0);
  const torch::Tensor t_file = transformer(*dit_file.get<CosmosModel>(), "fwd", "cond.out", "pad.padding_mask");
  EXPECT_EQ(max_abs_diff(t_file, transformer(*dit_folder.get<CosmosModel>(), "fwd", "cond.out", "pad.padding_mask")),
            0.0);
  expect_near("single-file pad.out", t_file, io_.get("pad.out"));
}

// A config naming only the class chooses the conditioner; the shapes give
// the rest and min_sequence_length is Anima's 512: the fixture's 12 rows
// followed by zeros.
TEST_F(AnimaParity, SingleFileConditionerFromItsClassAlone) {
  const std::string config = tmp_.path("class_only.json");
  {
    std::FILE* f = std::fopen(config.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("{\"_class_name\": \"AnimaTextConditioner\"}", f);
    std::fclose(f);
  }
  LoadedModel l = load_test_model(dir() + "/single_file.safetensors", {}, config);
  const AnimaConditionerModel* m = l.get<AnimaConditionerModel>();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->config().min_sequence_length, 512);
  EXPECT_EQ(m->config().num_attention_heads, read_json_file(dir() + "/text_conditioner/config.json")["num_attention_heads"]);
  const torch::Tensor out = condition(*m, "cond.");
  const torch::Tensor want = io_.get("cond.out");
  ASSERT_EQ(out.size(1), 512);
  expect_near("first rows", out.narrow(1, 0, want.size(1)), want);
  EXPECT_EQ(out.narrow(1, want.size(1), 512 - want.size(1)).abs().max().item<float>(), 0.0f);
}

// The pipeline's loop: FlowMatchEuler shift 3 over linspace(1, 1/N, N),
// CFG 4 with the empty negative, sigma as the model's time.
TEST_F(AnimaParity, FourStepLoop) {
  LoadedModel l = load_transformer();
  const CosmosModel* m = l.get<CosmosModel>();
  ASSERT_NE(m, nullptr);
  Conditioning pos, neg;
  pos.tensors["encoder_hidden_states"] = io_.get("loop.prompt_embeds")[0];
  neg.tensors["encoder_hidden_states"] = io_.get("loop.negative_prompt_embeds")[0];
  absl::StatusOr<FlowPredictor> predictor = m->flow_predictor(pos, &neg);
  ASSERT_THAT(predictor, IsOk());
  DenoiseRequest request;
  request.initial_latents = io_.get("loop.latents_in")[0].squeeze(1);
  request.schedule = m->default_schedule(request.initial_latents.sizes().vec());
  request.schedule.steps = static_cast<int>(io_.get("loop.timesteps").numel());
  request.guidance_scale = io_.get("loop.guidance_scale")[0].item<double>();
  request.has_negative = true;
  DenoiseOptions options;
  options.keep_history = true;
  absl::StatusOr<DenoiseRun> run = DenoiseRun::start(m->flow_convention(), request);
  ASSERT_THAT(run, IsOk());
  ASSERT_THAT(run->run(*predictor, request.guidance_scale, run->schedule().steps(), 0, options), IsOk());
  const std::optional<DenoiseResult> r = std::move(*run).finish();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(max_abs_diff(torch::tensor(r->schedule.sigmas), io_.get("loop.sigmas")), 0.0) << "sigmas";
  EXPECT_EQ(max_abs_diff(torch::tensor(r->schedule.timesteps), io_.get("loop.timesteps")), 0.0) << "timesteps";
  const torch::Tensor model_t = io_.get("loop.model_t");
  for (int i = 0; i < r->schedule.steps(); ++i) {
    EXPECT_EQ(model_time(m->flow_convention().time, r->schedule.timesteps[i]), model_t[i].item<float>()) << i;
  }
  expect_near("loop.latents (each step)", torch::stack(r->history), io_.get("loop.latents").squeeze(2));
  expect_near("loop.final", r->latents, io_.get("loop.final")[0].squeeze(1));
}

// The real configurations (docs/configs) size to upstream's parameter
// counts, as the fixture's real_config.json records them (diffusers on the
// meta device).
TEST(AnimaConfigs, RealSizesAreUpstreams) {
  const nlohmann::json real = read_json_file(anima_dir() + "/real_config.json");
  const auto count = [](const std::vector<ParamSpec>& table) {
    int64_t n = 0;
    for (const ParamSpec& p : table) {
      int64_t numel = 1;
      for (int64_t d : p.shape) numel *= d;
      n += numel;
    }
    return n;
  };
  absl::StatusOr<CosmosConfig> dit = cosmos_config_from_json(
      read_json_file(::diffusiond::testing::docs_dir() + "/configs/anima-transformer.json"), "anima-transformer.json");
  ASSERT_THAT(dit, IsOk());
  EXPECT_EQ(count(cosmos_parameter_table(*dit)), real["n_params_transformer"].get<int64_t>());
  absl::StatusOr<AnimaConditionerConfig> adapter = anima_conditioner_config_from_json(
      read_json_file(::diffusiond::testing::docs_dir() + "/configs/anima-text-conditioner.json"),
      "anima-text-conditioner.json");
  ASSERT_THAT(adapter, IsOk());
  EXPECT_EQ(count(anima_conditioner_parameter_table(*adapter)), real["n_params_conditioner"].get<int64_t>());
}

// Bad configs are refused naming the field.
TEST(AnimaConfigs, RefuseWhatThisPortDoesNotHave) {
  nlohmann::json c = read_json_file(anima_dir() + "/config.json");
  c.erase("extra_pos_embed_type");
  EXPECT_THAT(cosmos_config_from_json(c, "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("extra_pos_embed_type")));
  c["extra_pos_embed_type"] = nullptr;
  c["img_context_dim_in"] = 1024;
  EXPECT_THAT(cosmos_config_from_json(c, "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("img_context_dim_in")));
  c["img_context_dim_in"] = nullptr;
  c["attention_head_dim"] = 8;  // RoPE axes 4/2/2: too narrow
  EXPECT_THAT(cosmos_config_from_json(c, "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("attention_head_dim")));
  c["attention_head_dim"] = 32;
  c["num_layers"] = 100000;
  EXPECT_THAT(cosmos_config_from_json(c, "c.json"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("num_layers")));
  EXPECT_THAT(cosmos_config_from_json(to_json(CosmosConfig()), "defaults"), IsOk());

  nlohmann::json a = read_json_file(anima_dir() + "/text_conditioner/config.json");
  a["num_attention_heads"] = 5;
  EXPECT_THAT(anima_conditioner_config_from_json(a, "a.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("num_attention_heads")));
  EXPECT_THAT(anima_conditioner_config_from_json(to_json(AnimaConditionerConfig()), "defaults"), IsOk());
}

}  // namespace
}  // namespace diffusiond
