// Parity of the Krea 2 port with upstream diffusers, on the reference
// fixture (DIFFUSIOND_KREA2_FIXTURE, default the shared krea2-tiny): config
// and parameter table, FP8 selection, the single masked forward with its
// intermediates and RoPE tables, the batched forward with per-item masks,
// masked-row invariance, the FP8 checkpoint's forward, Step, the pipeline's
// position ids and packing, the activation estimate, and the 4-step loop
// with Krea's CFG form. Sizes and counts come from the fixture's
// config.json, stats.json, variant.json and io.safetensors, so another
// fixture of the same layout passes unchanged.
//
// Tolerance: 1e-5 absolute. The fixture's float32 noise floor (float64
// runs against the float32 one) is ~8e-7 on outputs of magnitude ~2; the
// margin allows libtorch's other summation orders, while a real mistake (a
// swapped modulation chunk, 1 + w dropped from an RMSNorm, a wrong GQA
// head mapping) moves outputs by 1e-3 or more.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/checkpoint/checkpoint.h"
#include "core/denoise/denoise_loop.h"
#include "core/models/denoiser_activations.h"
#include "core/models/flux/flux_latents.h"
#include "core/models/krea2/krea2_family.h"
#include "core/models/krea2/krea2_model.h"
#include "core/models/krea2/krea2_params.h"
#include "core/models/krea2/krea2_rope.h"
#include "core/models/model_loader.h"
#include "core/util/file_text.h"
#include "core/util/json.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/loaded_model.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tensor_file.h"

namespace diffusiond {
namespace krea2_parity_test {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::load_test_model;
using ::diffusiond::testing::LoadedModel;
using ::diffusiond::testing::max_abs_diff;
using ::diffusiond::testing::TempDir;
using ::diffusiond::testing::TensorFile;

constexpr double kKrea2Tolerance = 1e-5;

std::string fixture() { return ::diffusiond::testing::fixture_folder("DIFFUSIOND_KREA2_FIXTURE", "krea2-tiny"); }

nlohmann::json read_json(const std::string& name) {
  return ::diffusiond::testing::read_json_file(fixture() + "/" + name);
}

Krea2Config fixture_config() {
  absl::StatusOr<std::string> text = read_text_file(fixture() + "/config.json");
  EXPECT_THAT(text, IsOk());
  absl::StatusOr<Krea2Config> config = parse_krea2_config(text.ok() ? *text : "{}", "config.json");
  EXPECT_THAT(config, IsOk());
  return config.ok() ? *config : Krea2Config();
}

std::set<std::string> json_names(const nlohmann::json& list) { return ::diffusiond::testing::json_string_set(list); }

// A diffusers model folder in `tmp` over the fixture's `weights` folder
// ("transformer" or "transformer_fp8"): the fixture keeps config.json and
// scheduler_config.json beside them.
std::string model_folder(const TempDir& tmp, const std::string& weights) {
  return ::diffusiond::testing::fixture_model_folder(tmp.path(), fixture() + "/config.json",
                                                     fixture() + "/" + weights + "/diffusion_pytorch_model.safetensors",
                                                     fixture() + "/scheduler_config.json");
}

class Krea2Parity : public ::testing::Test {
 protected:
  // Loads the fixture's `weights` folder; FP8 storage off.
  LoadedModel load(const std::string& weights = "transformer") {
    LoadedModel l = load_test_model(model_folder(tmp_, weights), ModelLoadOptions());
    EXPECT_NE(l.get<Krea2Model>(), nullptr);
    return l;
  }

  // The inputs "<prefix>.*" of io.safetensors with fwd.position_ids (the
  // batch shares them, as upstream's call).
  Krea2Inputs inputs(const std::string& prefix) const {
    Krea2Inputs in;
    in.hidden_states = io_.get(prefix + ".hidden_states");
    in.encoder_hidden_states = io_.get(prefix + ".encoder_hidden_states");
    in.timestep = io_.get(prefix + ".timestep");
    in.position_ids = io_.get("fwd.position_ids");
    in.encoder_attention_mask = io_.get(prefix + ".encoder_attention_mask");
    return in;
  }

  TempDir tmp_;
  TensorFile io_{fixture() + "/io.safetensors"};
};

double forward_diff(const Krea2Model& model, const Krea2Inputs& in, const torch::Tensor& expected,
                    NamedTensors* intermediates = nullptr) {
  absl::StatusOr<torch::Tensor> out = model.forward(in, intermediates);
  EXPECT_THAT(out, IsOk());
  if (!out.ok()) return 1e9;
  EXPECT_EQ(out->sizes(), expected.sizes());
  EXPECT_EQ(out->scalar_type(), torch::kFloat32);
  return max_abs_diff(*out, expected);
}

TEST(Krea2ParityConfig, TableIsTheCheckpointsAndCountsAsUpstream) {
  const Krea2Config config = fixture_config();
  const nlohmann::json stats = read_json("stats.json");
  EXPECT_EQ(config.hidden_size(), stats.at("inner_dim").get<int64_t>());
  const nlohmann::json variant = read_json("variant.json");
  const nlohmann::json& declared = variant.at("config");
  EXPECT_EQ(config.num_key_value_heads, declared.at("num_key_value_heads").get<int64_t>());
  EXPECT_EQ(config.text_num_key_value_heads, declared.at("text_num_key_value_heads").get<int64_t>());
  EXPECT_EQ(config.num_text_layers, declared.at("num_text_layers").get<int64_t>());
  EXPECT_EQ(config.rope_theta, declared.at("rope_theta").get<double>());
  EXPECT_EQ(config.norm_eps, declared.at("norm_eps").get<double>());
  const std::vector<ParamSpec> table = krea2_parameter_table(config);
  int64_t params = 0;
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const ParamSpec& p : table) {
    int64_t n = 1;
    for (int64_t d : p.shape) n *= d;
    params += n;
    shapes[p.name] = p.shape;
  }
  EXPECT_EQ(params, stats.at("n_params").get<int64_t>());
  absl::StatusOr<std::unique_ptr<Checkpoint>> ckpt =
      Checkpoint::open(fixture() + "/transformer/diffusion_pytorch_model.safetensors");
  ASSERT_THAT(ckpt, IsOk());
  EXPECT_EQ((*ckpt)->tensors().size(), table.size());
  for (const TensorRecord& t : (*ckpt)->tensors()) {
    ASSERT_EQ(shapes.count(t.name), 1u) << t.name;
    EXPECT_EQ(shapes[t.name], t.shape) << t.name;
  }
}

// plan-config's path: the family from config.json alone, its recipe's
// table and latent channels without weights.
TEST(Krea2ParityConfig, RecipeFromConfigAlone) {
  absl::StatusOr<std::string> json = read_text_file(fixture() + "/config.json");
  ASSERT_THAT(json, IsOk());
  ASSERT_EQ(find_family_for_config(*json), krea2_family());
  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe = krea2_family()->recipe_for_config(*json, "config.json");
  ASSERT_THAT(recipe, IsOk());
  const Krea2Config config = fixture_config();
  EXPECT_EQ((*recipe)->parameter_table().size(), krea2_parameter_table(config).size());
  EXPECT_EQ((*recipe)->latent_geometry().channels, config.in_channels / 4);
  EXPECT_THAT((*recipe)->describe(), ::testing::HasSubstr(config.describe()));
  EXPECT_EQ((*recipe)->classify("transformer_blocks.0.scale_shift_table", {6, config.hidden_size()}), ParamKind::kBare);
}

TEST(Krea2ParityConfig, RefusesWhatCannotRun) {
  const auto refused = [](const std::string& json, const char* needle) {
    absl::StatusOr<Krea2Config> c = parse_krea2_config(json, "c.json");
    EXPECT_FALSE(c.ok()) << json;
    EXPECT_THAT(std::string(c.status().message()), ::testing::HasSubstr(needle)) << json;
  };
  refused(R"({"axes_dims_rope": [32, 48, 46]})", "axes_dims_rope");
  refused(R"({"num_key_value_heads": 7})", "num_key_value_heads");
  refused(R"({"text_num_key_value_heads": 3})", "text_num_key_value_heads");
  refused(R"({"text_hidden_dim": 2561})", "text_hidden_dim");
  refused(R"({"in_channels": 62})", "in_channels");
  refused(R"({"num_layers": 100000})", "num_layers");
  refused(R"({"_class_name": "QwenImageTransformer2DModel"})", "_class_name");
  // Upstream's None: one KV head per query head.
  absl::StatusOr<Krea2Config> mha = parse_krea2_config(R"({"num_key_value_heads": null})", "c.json");
  ASSERT_THAT(mha, IsOk());
  EXPECT_EQ(mha->num_key_value_heads, mha->num_attention_heads);
}

// FP8 storage picks exactly the layers upstream's layerwise casting casts
// (stats.json fp8.cast): their weights from the bf16 folder (our storage
// leaves every bias dense), weights and biases as stored in the FP8 folder.
TEST(Krea2ParitySelection, Fp8LayersAreUpstreams) {
  const nlohmann::json fp8 = read_json("stats.json").at("fp8");
  const std::set<std::string> cast = json_names(fp8.at("cast"));
  std::set<std::string> cast_weights;
  for (const std::string& name : cast) {
    if (absl::EndsWith(name, ".weight")) cast_weights.insert(name);
  }
  EXPECT_FALSE(cast_weights.empty());
  const PrecisionDeclaration declared = krea2_precision_declaration();
  EXPECT_EQ(std::set<std::string>(declared.skip_patterns.begin(), declared.skip_patterns.end()),
            json_names(fp8.at("skip_layerwise_casting_patterns")));
  EXPECT_EQ(std::set<std::string>(declared.keep_in_fp32_modules.begin(), declared.keep_in_fp32_modules.end()),
            json_names(fp8.at("keep_in_fp32_modules")));
  std::set<std::string> all(default_fp8_skip_patterns().begin(), default_fp8_skip_patterns().end());
  all.insert(declared.skip_patterns.begin(), declared.skip_patterns.end());
  all.insert(declared.keep_in_fp32_modules.begin(), declared.keep_in_fp32_modules.end());
  EXPECT_EQ(all, json_names(fp8.at("skip_patterns")));
  for (const std::string weights : {"transformer", "transformer_fp8"}) {
    TempDir tmp;
    absl::StatusOr<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(model_folder(tmp, weights));
    ASSERT_THAT(ckpt, IsOk());
    ModelLoadOptions options;
    options.fp8.format = Fp8Format::kE4M3Fn;
    absl::StatusOr<ModelPlan> plan = plan_model(**ckpt, options);
    ASSERT_THAT(plan, IsOk());
    EXPECT_EQ(plan->family, krea2_family());
    std::set<std::string> encoded, kept;
    for (const PlannedTensor& t : plan->plan.tensors) {
      if (t.action == PlannedTensor::Action::kFp8Encode) encoded.insert(t.name);
      if (t.action == PlannedTensor::Action::kFp8Keep) kept.insert(t.name);
    }
    if (weights == "transformer") {
      EXPECT_EQ(encoded, cast_weights);
      EXPECT_TRUE(kept.empty());
    } else {
      EXPECT_TRUE(encoded.empty());
      EXPECT_EQ(kept, cast);
    }
  }
}

TEST_F(Krea2Parity, SingleForwardAndIntermediates) {
  LoadedModel l = load();
  const Krea2Model* model = l.get<Krea2Model>();
  ASSERT_NE(model, nullptr);
  NamedTensors got;
  const double diff = forward_diff(*model, inputs("fwd"), io_.get("fwd.out"), &got);
  std::printf("single forward vs fwd.out: max abs diff %.3g (fwd.out_f64: %.3g)\n", diff,
              max_abs_diff(io_.get("fwd.out"), io_.get("fwd.out_f64")));
  EXPECT_LT(diff, kKrea2Tolerance);
  // Item 0 of each, flattened as the fixture stores them.
  std::vector<std::string> names = {"temb",   "temb_mod", "text_projector", "text_fusion",
                                    "txt_in", "img_in",   "final_norm"};
  for (int64_t i = 0; i < fixture_config().num_layers; ++i) names.push_back(absl::StrCat("block", i));
  for (const std::string& name : names) {
    const torch::Tensor expected = io_.get("dbg." + name);
    ASSERT_EQ(got.count(name), 1u) << name;
    const torch::Tensor ours = got.at(name)[0].reshape(expected.sizes());
    EXPECT_LT(max_abs_diff(ours, expected), kKrea2Tolerance) << name;
  }
  // Upstream's tables repeat each pair's value over its two channels.
  const double rope = std::max(max_abs_diff(got.at("rope_cos").repeat_interleave(2, -1), io_.get("dbg.rope_cos")),
                               max_abs_diff(got.at("rope_sin").repeat_interleave(2, -1), io_.get("dbg.rope_sin")));
  std::printf("RoPE tables: max abs diff %.3g\n", rope);
  EXPECT_LT(rope, 1e-6);
}

TEST_F(Krea2Parity, BatchedForwardWithPerItemMasks) {
  LoadedModel l = load();
  const Krea2Model* model = l.get<Krea2Model>();
  ASSERT_NE(model, nullptr);
  const double diff = forward_diff(*model, inputs("batch"), io_.get("batch.out"));
  std::printf("batched forward vs batch.out: max abs diff %.3g\n", diff);
  EXPECT_LT(diff, kKrea2Tolerance);
}

// Masked text rows are never read as keys: other garbage there changes
// nothing, and a mask of ones is no mask.
TEST_F(Krea2Parity, MaskedRowsAreNeverRead) {
  LoadedModel l = load();
  const Krea2Model* model = l.get<Krea2Model>();
  ASSERT_NE(model, nullptr);
  Krea2Inputs in = inputs("fwd");
  const torch::Tensor padded = in.encoder_attention_mask.eq(0).view({1, -1, 1, 1}).expand_as(in.encoder_hidden_states);
  if (padded.sum().item<int64_t>() == 0)
    std::printf("fwd.encoder_attention_mask pads nothing: garbage rows untested\n");
  in.encoder_hidden_states =
      torch::where(padded, torch::full_like(in.encoder_hidden_states, 7.5f), in.encoder_hidden_states);
  EXPECT_LT(forward_diff(*model, in, io_.get("fwd.out")), kKrea2Tolerance);
  Krea2Inputs ones = inputs("batch");
  ones.encoder_attention_mask = torch::ones_like(ones.encoder_attention_mask);
  Krea2Inputs none = ones;
  none.encoder_attention_mask = torch::Tensor();
  absl::StatusOr<torch::Tensor> with_ones = model->forward(ones);
  ASSERT_THAT(with_ones, IsOk());
  EXPECT_LT(forward_diff(*model, none, *with_ones), kKrea2Tolerance);
}

// The FP8 folder holds upstream's cast layers (weights and biases) as
// unscaled e4m3fn codes: its forward is upstream's layerwise-cast one.
TEST_F(Krea2Parity, Fp8CheckpointForward) {
  LoadedModel l = load("transformer_fp8");
  const Krea2Model* model = l.get<Krea2Model>();
  ASSERT_NE(model, nullptr);
  EXPECT_GT(model->weights().fp8_count(), 0);
  const double diff = forward_diff(*model, inputs("fwd"), io_.get("fp8.out"));
  std::printf("FP8 checkpoint forward vs fp8.out: max abs diff %.3g\n", diff);
  EXPECT_LT(diff, kKrea2Tolerance);
}

// Reduced precision runs and stays near upstream's float32 output: bfloat16
// compute (norm weights kept in float32 storage, RoPE float32), and FP8
// storage chosen at load over the bf16 folder (biases dense, so not bit for
// bit fp8.out). Bounds: 3x upstream's own bf16 / FP8 deviation (stats.json).
TEST_F(Krea2Parity, ReducedPrecisionForwardsStayNearUpstreams) {
  const nlohmann::json stats = read_json("stats.json");
  {
    ModelLoadOptions options;
    options.compute_dtype = torch::kBFloat16;
    TempDir tmp;
    LoadedModel l = load_test_model(model_folder(tmp, "transformer"), options);
    const Krea2Model* model = l.get<Krea2Model>();
    ASSERT_NE(model, nullptr);
    absl::StatusOr<torch::Tensor> out = model->forward(inputs("batch"));
    ASSERT_THAT(out, IsOk());
    EXPECT_EQ(out->scalar_type(), torch::kBFloat16);
    const double diff = max_abs_diff(*out, io_.get("batch.out"));
    std::printf("bfloat16 batched forward vs batch.out: max abs diff %.3g (upstream bf16: %.3g)\n", diff,
                stats.at("fwd_bf16").get<double>());
    EXPECT_LT(diff, 3 * stats.at("fwd_bf16").get<double>());
  }
  {
    ModelLoadOptions options;
    options.fp8.format = Fp8Format::kE4M3Fn;
    TempDir tmp;
    LoadedModel l = load_test_model(model_folder(tmp, "transformer"), options);
    const Krea2Model* model = l.get<Krea2Model>();
    ASSERT_NE(model, nullptr);
    EXPECT_GT(model->weights().fp8_count(), 0);
    const double diff = forward_diff(*model, inputs("fwd"), io_.get("fwd.out"));
    std::printf("FP8 storage at load vs fwd.out: max abs diff %.3g (upstream: %.3g)\n", diff,
                stats.at("fp8_vs_fwd").get<double>());
    EXPECT_LT(diff, 3 * stats.at("fp8_vs_fwd").get<double>());
  }
}

TEST_F(Krea2Parity, StepMatchesForward) {
  LoadedModel l = load();
  const Krea2Model* model = l.get<Krea2Model>();
  ASSERT_NE(model, nullptr);
  const Krea2Inputs in = inputs("batch");
  NamedTensors named = {{"hidden_states", in.hidden_states},
                        {"encoder_hidden_states", in.encoder_hidden_states},
                        {"encoder_attention_mask", in.encoder_attention_mask},
                        {"timestep", in.timestep},
                        {"position_ids", in.position_ids}};
  absl::StatusOr<NamedTensors> out = model->step(named);
  ASSERT_THAT(out, IsOk());
  absl::StatusOr<torch::Tensor> direct = model->forward(in);
  ASSERT_THAT(direct, IsOk());
  EXPECT_EQ(max_abs_diff(out->at("out"), *direct), 0.0);
  std::optional<ActivationQuery> query = model->step_activation_query(named);
  ASSERT_TRUE(query.has_value());
  EXPECT_EQ(query->batch, in.hidden_states.size(0));
  EXPECT_EQ(query->text_tokens, in.encoder_hidden_states.size(1));
  named.erase("position_ids");
  named["guidance"] = in.timestep;
  absl::StatusOr<NamedTensors> bad = model->step(named);
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), ::testing::HasSubstr("missing input \"position_ids\""));
  EXPECT_THAT(std::string(bad.status().message()), ::testing::HasSubstr("unexpected input \"guidance\""));
  named.erase("guidance");
  named["position_ids"] = in.position_ids.narrow(0, 1, in.position_ids.size(0) - 1);
  bad = model->step(named);
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), ::testing::HasSubstr("\"position_ids\""));
}

TEST(Krea2ParityLatents, PositionIdsAndPackingAsThePipeline) {
  TensorFile io(fixture() + "/io.safetensors");
  const torch::Tensor noise = io.get("loop.noise");  // [1, C, H, W]
  const int64_t text_len = io.get("fwd.encoder_hidden_states").size(1);
  const int64_t rows = noise.size(2) / 2, cols = noise.size(3) / 2;
  EXPECT_EQ(max_abs_diff(krea2_position_ids(text_len, rows, cols), io.get("fwd.position_ids")), 0.0);
  absl::StatusOr<torch::Tensor> packed = pack_latents(noise);
  ASSERT_THAT(packed, IsOk());
  EXPECT_EQ(max_abs_diff(*packed, io.get("loop.noise_packed")), 0.0);
  const torch::Tensor final_packed = io.get("loop.final");
  absl::StatusOr<torch::Tensor> unpacked = unpack_latents(final_packed, noise.size(2), noise.size(3));
  ASSERT_THAT(unpacked, IsOk());
  // The pipeline's _unpack_latents adds a frame axis: [B, C, 1, H, W].
  EXPECT_EQ(max_abs_diff(unpacked->unsqueeze(2), io.get("loop.final_unpacked")), 0.0);
  const uint64_t seed = read_json("variant.json").at("seed").get<uint64_t>() + 2;
  EXPECT_EQ(max_abs_diff(seeded_noise(noise.sizes().vec(), seed), noise), 0.0);
}

TEST(Krea2ParityActivations, GrowWithTheImageAndTheText) {
  const Krea2Config config = fixture_config();
  ActivationQuery q;
  q.latent_shape = {config.in_channels / 4, 64, 64};
  q.text_tokens = 32;
  q.denoise_loop = true;
  const int64_t small = denoiser_activations(config, q, AttentionOptions(), 0).bytes;
  q.latent_shape = {config.in_channels / 4, 128, 128};
  const ActivationEstimate large = denoiser_activations(config, q, AttentionOptions(), 0);
  q.text_tokens = 512;
  const int64_t long_text = denoiser_activations(config, q, AttentionOptions(), 0).bytes;
  EXPECT_GT(small, 0);
  EXPECT_GT(large.bytes, small);
  EXPECT_GT(long_text, large.bytes);
  EXPECT_THAT(large.breakdown, ::testing::HasSubstr("krea2 at"));
}

// The fixture's loop through the generic denoise loop: noise drawn from the
// seed, the model's own schedule (its scheduler_config.json's dynamic
// shift, or the fixed mu of a distilled checkpoint), the predictor's
// packing and position ids, Krea's CFG cond + g (cond - uncond) against a
// masked negative prompt as the loop's scale 1 + g, and Euler steps.
TEST_F(Krea2Parity, FourStepLoopWithKreaCfg) {
  LoadedModel l = load();
  const Krea2Model* model = l.get<Krea2Model>();
  ASSERT_NE(model, nullptr);
  const nlohmann::json variant = read_json("variant.json");
  const torch::Tensor noise = io_.get("loop.noise");  // [1, C, H, W]
  DenoiseRequest request;
  request.latent_shape = noise[0].sizes().vec();
  request.seed = variant.at("seed").get<uint64_t>() + 2;
  request.schedule =
      krea2_schedule(model->default_schedule(request.latent_shape), variant.at("is_distilled").get<bool>());
  request.schedule.steps = static_cast<int>(io_.get("loop.timesteps").numel());
  const double g = io_.get("loop.guidance_scale").item<double>();
  request.guidance_scale = 1.0 + g;
  request.has_negative = g > 0;
  EXPECT_EQ(request.schedule.image_seq_len, io_.get("loop.model_in").size(1));
  Conditioning positive, negative;
  positive.tensors["encoder_hidden_states"] = io_.get("loop.prompt_embeds")[0];
  positive.tensors["encoder_attention_mask"] = io_.get("fwd.encoder_attention_mask")[0];
  if (request.has_negative) {  // the pipeline encodes no negative prompt for g = 0
    negative.tensors["encoder_hidden_states"] = io_.get("loop.negative_prompt_embeds")[0];
    negative.tensors["encoder_attention_mask"] = io_.get("loop.negative_prompt_embeds_mask")[0];
  }
  absl::StatusOr<FlowPredictor> predict = model->flow_predictor(positive, request.has_negative ? &negative : nullptr);
  ASSERT_THAT(predict, IsOk());
  // Records what each transformer call saw and gave, packed as upstream's.
  std::vector<torch::Tensor> model_in, cond, uncond;
  const FlowPredictor recording = [&](const torch::Tensor& latents, float t,
                                      bool with_negative) -> absl::StatusOr<FlowPrediction> {
    absl::StatusOr<FlowPrediction> p = (*predict)(latents, t, with_negative);
    if (p.ok()) {
      model_in.push_back(*pack_latents(latents.unsqueeze(0)));
      cond.push_back(*pack_latents(p->positive.unsqueeze(0)));
      if (with_negative) uncond.push_back(*pack_latents(p->negative.unsqueeze(0)));
    }
    return p;
  };
  DenoiseOptions options;
  options.keep_history = true;
  absl::StatusOr<DenoiseResult> r = denoise(recording, model->flow_convention(), request, options);
  ASSERT_THAT(r, IsOk());

  // numpy's float32/float64 scalar promotion may move the last bit.
  EXPECT_LT(max_abs_diff(torch::tensor(r->schedule.sigmas), io_.get("loop.sigmas")), 1e-6) << "sigmas";
  EXPECT_LT(max_abs_diff(torch::tensor(r->schedule.timesteps), io_.get("loop.timesteps")), 1e-3) << "timesteps";
  const torch::Tensor model_t = io_.get("loop.model_t");
  for (int i = 0; i < request.schedule.steps; ++i) {
    EXPECT_NEAR(model_time(model->flow_convention().time, r->schedule.timesteps[i]), model_t[i].item<float>(), 1e-6)
        << i;
  }
  EXPECT_LT(max_abs_diff(torch::cat(model_in), io_.get("loop.model_in")), kKrea2Tolerance) << "model_in";
  EXPECT_LT(max_abs_diff(torch::cat(cond), io_.get("loop.cond_out")), kKrea2Tolerance) << "cond_out";
  if (request.has_negative) {
    EXPECT_LT(max_abs_diff(torch::cat(uncond), io_.get("loop.uncond_out")), kKrea2Tolerance) << "uncond_out";
  }
  absl::StatusOr<torch::Tensor> history = pack_latents(torch::stack(r->history));
  ASSERT_THAT(history, IsOk());
  absl::StatusOr<torch::Tensor> final_packed = pack_latents(r->latents.unsqueeze(0));
  ASSERT_THAT(final_packed, IsOk());
  const double steps_diff = max_abs_diff(*history, io_.get("loop.latents"));
  const double final_diff = max_abs_diff(*final_packed, io_.get("loop.final"));
  std::printf("4-step loop: max abs diff per step %.3g, final %.3g\n", steps_diff, final_diff);
  EXPECT_LT(steps_diff, kKrea2Tolerance);
  EXPECT_LT(final_diff, kKrea2Tolerance);
}

// is_distilled fixes mu at 1.15 whatever the resolution; otherwise mu
// follows the token count between the scheduler config's bounds.
TEST(Krea2ParitySchedule, DistilledFixesMu) {
  ScheduleOptions base = krea2_default_schedule();
  base.steps = 4;
  base.image_seq_len = 30;
  ScheduleOptions distilled = krea2_schedule(base, true);
  ASSERT_TRUE(distilled.mu.has_value());
  EXPECT_EQ(*distilled.mu, kKrea2DistilledMu);
  ScheduleOptions at_max = base;
  at_max.image_seq_len = base.max_seq_len;  // mu = max_shift = 1.15 there
  absl::StatusOr<Schedule> fixed = flow_match_schedule(distilled);
  absl::StatusOr<Schedule> resolution = flow_match_schedule(at_max);
  absl::StatusOr<Schedule> small = flow_match_schedule(base);
  ASSERT_THAT(fixed, IsOk());
  ASSERT_THAT(resolution, IsOk());
  ASSERT_THAT(small, IsOk());
  EXPECT_LT(max_abs_diff(torch::tensor(fixed->sigmas), torch::tensor(resolution->sigmas)), 1e-6);
  EXPECT_GT(max_abs_diff(torch::tensor(fixed->sigmas), torch::tensor(small->sigmas)), 1e-3);
  EXPECT_FALSE(krea2_schedule(distilled, false).mu.has_value());
}

// A transformer folder inside a Krea2Pipeline folder whose model_index.json
// says is_distilled gets the fixed mu; without it, the resolution's.
TEST(Krea2ParitySchedule, PipelineIsDistilledReachesTheModel) {
  for (const bool distilled : {false, true}) {
    TempDir tmp;
    std::filesystem::create_directories(tmp.path("transformer"));
    for (const char* name : {"config.json", "scheduler_config.json"}) {
      std::filesystem::create_symlink(fixture() + "/" + name, tmp.path(std::string("transformer/") + name));
    }
    std::filesystem::create_symlink(fixture() + "/transformer/diffusion_pytorch_model.safetensors",
                                    tmp.path("transformer/diffusion_pytorch_model.safetensors"));
    tmp.write("model_index.json",
              absl::StrCat(R"({"_class_name": "Krea2Pipeline", "is_distilled": )", distilled ? "true" : "false", "}"));
    LoadedModel l = load_test_model(tmp.path("transformer"), ModelLoadOptions());
    const Krea2Model* model = l.get<Krea2Model>();
    ASSERT_NE(model, nullptr);
    const ScheduleOptions o = model->default_schedule({model->config().in_channels / 4, 64, 64});
    EXPECT_EQ(o.mu.has_value(), distilled);
    if (distilled) {
      EXPECT_EQ(*o.mu, kKrea2DistilledMu);
    }
    EXPECT_TRUE(o.dynamic_shift);
  }
}

}  // namespace krea2_parity_test
}  // namespace diffusiond
