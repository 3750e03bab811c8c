// Parity of the Wan 2.x transformer port with upstream diffusers, on the
// reference fixtures DIFFUSIOND_WAN_FIXTURE (default wan-tiny, one expert)
// and DIFFUSIOND_WAN22_FIXTURE (default wan22-tiny, Wan 2.2's two experts
// transformer and transformer_2): each expert's forward loaded from the
// diffusers folder, the original single file and the same with ComfyUI's
// "model.diffusion_model." prefix; the batched forward and the
// intermediates; the FP8 folder and the FP8 selection against the
// fixture's cast list; Step; and the 4-step UniPC loop through the generic
// denoise(), switching experts at boundary_ratio for Wan 2.2. Sizes come
// from config.json, io.safetensors and stats.json, so another fixture of
// the same layout passes unchanged.
//
// Tolerance: 1e-5 absolute. The fixtures' float32 noise floor (float64 runs
// against the float32 one) is ~6e-7 on outputs of magnitude ~2; a real
// mistake (a swapped chunk, the RMSNorm per head instead of across heads,
// centred RoPE positions, a masked text) moves outputs by 1e-3 or more.
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "core/checkpoint/dtype.h"
#include "core/checkpoint/safetensors_writer.h"
#include "core/denoise/denoise_loop.h"
#include "core/engine/engine.h"
#include "core/engine/model_admission.h"
#include "core/models/denoiser_activations.h"
#include "core/models/model_family.h"
#include "core/models/wan/wan_model.h"
#include "core/models/wan/wan_params.h"
#include "core/precision/precision_policy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/engine_under_budget.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/loaded_model.h"
#include "tests/testing/scaled_fp8_file.h"
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
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr double kWanTolerance = 1e-5;

struct WanFixture {
  const char* env;
  const char* name;
};
constexpr WanFixture kWan21Fixture = {"DIFFUSIOND_WAN_FIXTURE", "wan-tiny"};
constexpr WanFixture kWan22Fixture = {"DIFFUSIOND_WAN22_FIXTURE", "wan22-tiny"};

std::string wan_folder(const WanFixture& f) { return ::diffusiond::testing::fixture_folder(f.env, f.name); }

// The files of expert `expert` (0 = transformer, 1 = transformer_2).
struct WanExpertFiles {
  std::string weights_dir, config, single_file, expected;
};
WanExpertFiles wan_expert_files(const std::string& dir, int expert) {
  if (expert == 0) {
    return {dir + "/transformer", dir + "/config.json", dir + "/single_file.safetensors", "fwd.out"};
  }
  return {dir + "/transformer_2", dir + "/config_2.json", dir + "/single_file_2.safetensors", "fwd2.out"};
}

// Rewrites `from` with every name prefixed, as ComfyUI full checkpoints carry them.
std::string wan_prefixed_copy(const std::string& from, const std::string& to, const std::string& prefix) {
  absl::StatusOr<std::unique_ptr<Checkpoint>> src = Checkpoint::open(from);
  EXPECT_THAT(src, IsOk());
  if (!src.ok()) return to;
  std::vector<TensorSpec> specs;
  for (const TensorRecord& t : (*src)->tensors()) specs.push_back({prefix + t.name, t.dtype, t.shape});
  auto writer = SafetensorsWriter::create(to, specs);
  EXPECT_THAT(writer, IsOk());
  if (!writer.ok()) return to;
  for (const TensorRecord& t : (*src)->tensors()) {
    std::string bytes(t.nbytes, '\0');
    EXPECT_THAT((*src)->read(t, bytes.data()), IsOk());
    EXPECT_THAT((*writer)->append(bytes.data(), t.nbytes), IsOk());
  }
  EXPECT_THAT((*writer)->close(), IsOk());
  return to;
}

// A diffusers model folder in `tmp` (the fixture keeps config.json beside
// transformer/): links to the config, the weights of `weights_dir` and the
// scheduler config.
std::string wan_model_folder(const TempDir& tmp, const std::string& dir, const std::string& config,
                             const std::string& weights_dir, const std::string& name) {
  return ::diffusiond::testing::fixture_model_folder(
      tmp.path(name), config, weights_dir + "/diffusion_pytorch_model.safetensors", dir + "/scheduler_config.json");
}

enum class WanSource { kDiffusersFolder, kSingleFile, kPrefixedSingleFile };

struct WanCase {
  WanFixture fixture;
  int expert;
  WanSource source;
};

std::string wan_case_name(const ::testing::TestParamInfo<WanCase>& info) {
  const WanCase& c = info.param;
  std::string name = std::string(c.fixture.name == std::string("wan-tiny") ? "Wan" : "Wan22") +
                     (c.expert == 0 ? "Expert1" : "Expert2");
  switch (c.source) {
    case WanSource::kDiffusersFolder:
      return name + "DiffusersFolder";
    case WanSource::kSingleFile:
      return name + "SingleFile";
    case WanSource::kPrefixedSingleFile:
      return name + "PrefixedSingleFile";
  }
  return name;
}

class WanParity : public ::testing::TestWithParam<WanCase> {
 protected:
  const WanCase& param() const { return GetParam(); }
  std::string dir() const { return wan_folder(param().fixture); }

  LoadedModel load(const ModelLoadOptions& options = {}) {
    const WanExpertFiles files = wan_expert_files(dir(), param().expert);
    std::string path, config;
    switch (param().source) {
      case WanSource::kDiffusersFolder:
        path = wan_model_folder(tmp_, dir(), files.config, files.weights_dir, "model");
        break;
      // A single file's head count is not in its shapes: name the config.
      case WanSource::kSingleFile:
        path = files.single_file;
        config = files.config;
        break;
      case WanSource::kPrefixedSingleFile:
        path = wan_prefixed_copy(files.single_file, tmp_.path("comfy.safetensors"), "model.diffusion_model.");
        config = files.config;
        break;
    }
    LoadedModel l = load_test_model(path, options, config);
    EXPECT_NE(l.get<WanModel>(), nullptr);
    return l;
  }

  TempDir tmp_;
  TensorFile io_{dir() + "/io.safetensors"};
};

double wan_forward_diff(const WanModel& model, const TensorFile& io, const std::string& prefix,
                        const std::string& expected) {
  absl::StatusOr<torch::Tensor> out = model.forward(io.get(prefix + ".hidden_states"), io.get(prefix + ".timestep"),
                                                    io.get(prefix + ".encoder_hidden_states"));
  EXPECT_THAT(out, IsOk());
  if (!out.ok()) return 1e9;
  const torch::Tensor want = io.get(expected);
  EXPECT_EQ(out->sizes(), want.sizes());
  EXPECT_EQ(out->scalar_type(), torch::kFloat32);
  return max_abs_diff(*out, want);
}

TEST_P(WanParity, SingleForward) {
  LoadedModel l = load();
  const WanModel* model = l.get<WanModel>();
  ASSERT_NE(model, nullptr);
  const std::string expected = wan_expert_files(dir(), param().expert).expected;
  const double diff = wan_forward_diff(*model, io_, "fwd", expected);
  std::printf("single forward vs %s: max abs diff %.3g\n", expected.c_str(), diff);
  EXPECT_LT(diff, kWanTolerance);
}

TEST_P(WanParity, BatchedForward) {
  if (param().expert != 0) GTEST_SKIP() << "the fixture's batch ran the first expert";
  LoadedModel l = load();
  const WanModel* model = l.get<WanModel>();
  ASSERT_NE(model, nullptr);
  const double diff = wan_forward_diff(*model, io_, "batch", "batch.out");
  std::printf("batched forward vs batch.out: max abs diff %.3g\n", diff);
  EXPECT_LT(diff, kWanTolerance);
}

TEST_P(WanParity, StepMatchesForward) {
  LoadedModel l = load();
  const WanModel* model = l.get<WanModel>();
  ASSERT_NE(model, nullptr);
  const NamedTensors in = {{"hidden_states", io_.get("fwd.hidden_states")},
                           {"timestep", io_.get("fwd.timestep")},
                           {"encoder_hidden_states", io_.get("fwd.encoder_hidden_states")}};
  absl::StatusOr<NamedTensors> out = model->step(in);
  ASSERT_THAT(out, IsOk());
  absl::StatusOr<torch::Tensor> direct =
      model->forward(in.at("hidden_states"), in.at("timestep"), in.at("encoder_hidden_states"));
  ASSERT_THAT(direct, IsOk());
  EXPECT_EQ(max_abs_diff(out->at("out"), *direct), 0.0);
  NamedTensors extra = in;
  extra["guidance"] = torch::ones({1});
  EXPECT_THAT(model->step(extra),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unexpected input \"guidance\" for Wan")));
}

INSTANTIATE_TEST_SUITE_P(Formats, WanParity,
                         ::testing::Values(WanCase{kWan21Fixture, 0, WanSource::kDiffusersFolder},
                                           WanCase{kWan21Fixture, 0, WanSource::kSingleFile},
                                           WanCase{kWan21Fixture, 0, WanSource::kPrefixedSingleFile},
                                           WanCase{kWan22Fixture, 0, WanSource::kDiffusersFolder},
                                           WanCase{kWan22Fixture, 0, WanSource::kSingleFile},
                                           WanCase{kWan22Fixture, 0, WanSource::kPrefixedSingleFile},
                                           WanCase{kWan22Fixture, 1, WanSource::kDiffusersFolder},
                                           WanCase{kWan22Fixture, 1, WanSource::kSingleFile},
                                           WanCase{kWan22Fixture, 1, WanSource::kPrefixedSingleFile}),
                         wan_case_name);

// Tests of one whole fixture (its first expert, or both for the loop).
class WanFixtureParity : public ::testing::TestWithParam<WanFixture> {
 protected:
  std::string dir() const { return wan_folder(GetParam()); }
  LoadedModel load_expert(int expert, const ModelLoadOptions& options = {}) {
    const WanExpertFiles files = wan_expert_files(dir(), expert);
    LoadedModel l = load_test_model(
        wan_model_folder(tmp_, dir(), files.config, files.weights_dir, expert == 0 ? "expert1" : "expert2"), options);
    EXPECT_NE(l.get<WanModel>(), nullptr);
    return l;
  }

  TempDir tmp_;
  TensorFile io_{dir() + "/io.safetensors"};
  nlohmann::json stats_ = read_json_file(dir() + "/stats.json");
};

TEST_P(WanFixtureParity, IntermediatesMatchUpstream) {
  LoadedModel l = load_expert(0);
  const WanModel* model = l.get<WanModel>();
  ASSERT_NE(model, nullptr);
  WanIntermediates dbg;
  ASSERT_THAT(
      model->forward(io_.get("fwd.hidden_states"), io_.get("fwd.timestep"), io_.get("fwd.encoder_hidden_states"), &dbg),
      IsOk());
  EXPECT_EQ(max_abs_diff(io_.get("dbg.time_in"), io_.get("fwd.timestep")), 0.0) << "the timestep is not divided";
  const std::vector<std::pair<const char*, torch::Tensor>> pairs = {
      {"dbg.t_sinusoid", dbg.t_sinusoid},
      {"dbg.temb", dbg.temb},
      {"dbg.timestep_proj", dbg.timestep_proj},
      {"dbg.text_embed", dbg.text_embed},
      {"dbg.patch_embed", dbg.patch_embed},
      // Upstream repeats each value for the pair (2j, 2j+1).
      {"dbg.rope_cos", dbg.rope_cos.repeat_interleave(2, 1)},
      {"dbg.rope_sin", dbg.rope_sin.repeat_interleave(2, 1)},
      {"dbg.norm_out_ln", dbg.norm_out},
  };
  for (const auto& [name, ours] : pairs) {
    const torch::Tensor want = io_.get(name);
    ASSERT_EQ(ours.sizes(), want.sizes()) << name;
    const double diff = max_abs_diff(ours, want);
    std::printf("%s: max abs diff %.3g\n", name, diff);
    EXPECT_LT(diff, kWanTolerance) << name;
  }
  for (size_t i = 0; i < dbg.blocks.size(); ++i) {
    const std::string name = "dbg.block" + std::to_string(i);
    const double diff = max_abs_diff(dbg.blocks[i], io_.get(name));
    std::printf("%s: max abs diff %.3g\n", name.c_str(), diff);
    EXPECT_LT(diff, kWanTolerance) << name;
  }
}

// transformer_fp8/ stores the layerwise-cast parameters (weights and
// biases) as unscaled e4m3fn codes: kept as FP8 and decoded per use, its
// forward is upstream's LayerwiseCastingHook run.
TEST_P(WanFixtureParity, Fp8FolderForward) {
  const WanExpertFiles files = wan_expert_files(dir(), 0);
  LoadedModel l = load_test_model(wan_model_folder(tmp_, dir(), files.config, dir() + "/transformer_fp8", "fp8"), {});
  const WanModel* model = l.get<WanModel>();
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->weights().fp8_count(), static_cast<int64_t>(stats_["fp8"]["cast"].size()));
  absl::StatusOr<torch::Tensor> out =
      model->forward(io_.get("fwd.hidden_states"), io_.get("fwd.timestep"), io_.get("fwd.encoder_hidden_states"));
  ASSERT_THAT(out, IsOk());
  const double diff = max_abs_diff(*out, io_.get("fp8.out"));
  std::printf("FP8 folder forward vs fp8.out: max abs diff %.3g\n", diff);
  EXPECT_LT(diff, kWanTolerance);
}

// A ComfyUI scaled-fp8 single file (original names, ComfyUI's prefix): its
// block weights load as FP8 codes with their per-tensor scales applied, so
// the forward equals the same weights dequantised to float32, and is no
// further from upstream's forward than three times upstream's own FP8
// casting is.
TEST_P(WanFixtureParity, ScaledFp8SingleFileAppliesItsScales) {
  const WanExpertFiles files = wan_expert_files(dir(), 0);
  const testing::ScaledFp8Copy copy = testing::write_scaled_fp8_copy(
      files.single_file, tmp_.path("scaled.safetensors"), tmp_.path("dequantized.safetensors"),
      "model.diffusion_model.", [](const TensorRecord& t) {
        return absl::StartsWith(t.name, "blocks.") && absl::EndsWith(t.name, ".weight") && t.shape.size() == 2;
      });
  ASSERT_GT(copy.quantized, 0);
  LoadedModel scaled = load_test_model(copy.scaled, {}, files.config);
  LoadedModel dequantized = load_test_model(copy.dequantized, {}, files.config);
  ASSERT_NE(scaled.get<WanModel>(), nullptr);
  ASSERT_NE(dequantized.get<WanModel>(), nullptr);
  EXPECT_EQ(scaled.get<WanModel>()->weights().fp8_count(), copy.quantized);
  auto forward = [this](const WanModel& m) {
    absl::StatusOr<torch::Tensor> out =
        m.forward(io_.get("fwd.hidden_states"), io_.get("fwd.timestep"), io_.get("fwd.encoder_hidden_states"));
    EXPECT_THAT(out, IsOk());
    return out.ok() ? *out : torch::Tensor();
  };
  const torch::Tensor out = forward(*scaled.get<WanModel>());
  ASSERT_TRUE(out.defined());
  const double exact = max_abs_diff(out, forward(*dequantized.get<WanModel>()));
  const double from_upstream = max_abs_diff(out, io_.get("fwd.out"));
  const double upstream_fp8 = max_abs_diff(io_.get("fp8.out"), io_.get("fwd.out"));
  std::printf("scaled fp8 vs dequantised %.3g; vs fwd.out %.3g (upstream's FP8 cast: %.3g)\n", exact, from_upstream,
              upstream_fp8);
  EXPECT_LT(exact, kWanTolerance);
  EXPECT_LT(from_upstream, 3 * upstream_fp8);
}

// Our policy with Wan's declaration selects exactly upstream's cast layers:
// their weights get FP8 storage (our storage keeps biases dense, so the
// fixture's cast biases are those of exactly these layers), and the FP8
// folder holds exactly the cast list in FP8.
TEST_P(WanFixtureParity, Fp8SelectionIsUpstreams) {
  absl::StatusOr<WanConfig> config = wan_config_from_json(read_json_file(dir() + "/config.json"), "config.json");
  ASSERT_THAT(config, IsOk());
  Fp8Options fp8;
  fp8.format = Fp8Format::kE4M3Fn;
  absl::StatusOr<PrecisionPolicy> policy = PrecisionPolicy::create(fp8, wan_precision_declaration());
  ASSERT_THAT(policy, IsOk());
  std::set<std::string> ours, table_names;
  for (const ParamSpec& p : wan_parameter_table(*config)) {
    table_names.insert(p.name);
    if (policy->decide(p.name, p.kind).kind == StorageDecision::Kind::kFp8) ours.insert(module_path(p.name));
  }
  std::set<std::string> cast_modules, cast_names;
  for (const auto& name : stats_["fp8"]["cast"]) {
    const std::string n = name.get<std::string>();
    EXPECT_TRUE(table_names.count(n)) << n << " is not in the parameter table";
    cast_names.insert(n);
    cast_modules.insert(module_path(n));
  }
  EXPECT_FALSE(ours.empty());
  EXPECT_EQ(ours, cast_modules);
  for (const std::string& module : cast_modules) {
    EXPECT_TRUE(cast_names.count(module + ".weight") && cast_names.count(module + ".bias")) << module;
  }
  for (const auto& item : stats_["fp8"]["skipped_layers"].items()) {
    EXPECT_EQ(ours.count(item.key()), 0u) << item.key() << " is skipped upstream (" << item.value() << ")";
  }
  absl::StatusOr<std::unique_ptr<Checkpoint>> file =
      Checkpoint::open(dir() + "/transformer_fp8/diffusion_pytorch_model.safetensors");
  ASSERT_THAT(file, IsOk());
  std::set<std::string> stored_fp8;
  for (const TensorRecord& t : (*file)->tensors()) {
    if (t.dtype == DType::kF8E4M3) stored_fp8.insert(t.name);
  }
  EXPECT_EQ(stored_fp8, cast_names);
}

// FP8 storage chosen at load from the BF16 weights: every cast layer's
// weight is stored in FP8 (its bias stays dense, so the output is near
// fp8.out but not equal to it).
TEST_P(WanFixtureParity, Fp8StorageAtLoad) {
  ModelLoadOptions options;
  options.fp8.format = Fp8Format::kE4M3Fn;
  LoadedModel l = load_expert(0, options);
  const WanModel* model = l.get<WanModel>();
  ASSERT_NE(model, nullptr);
  int64_t cast_weights = 0;
  for (const auto& name : stats_["fp8"]["cast"]) {
    const std::string n = name.get<std::string>();
    cast_weights += n == module_path(n) + ".weight";
  }
  EXPECT_EQ(model->weights().fp8_count(), cast_weights);
  absl::StatusOr<torch::Tensor> out =
      model->forward(io_.get("fwd.hidden_states"), io_.get("fwd.timestep"), io_.get("fwd.encoder_hidden_states"));
  ASSERT_THAT(out, IsOk());
  const double to_fp8 = max_abs_diff(*out, io_.get("fp8.out")), to_fwd = max_abs_diff(*out, io_.get("fwd.out"));
  std::printf("FP8-storage forward: vs fp8.out %.3g, vs fwd.out %.3g\n", to_fp8, to_fwd);
  // Rounding the weights moves the output about as far as upstream's cast does.
  EXPECT_LT(to_fwd, 4 * stats_["fp8_vs_fwd"].get<double>() + kWanTolerance);
}

// bfloat16 compute (the keep-in-float32 modules stored as float32, every
// forward at bfloat16): near upstream's own bfloat16 run, which is itself
// ~1e-2 from the float32 one on these outputs.
TEST_P(WanFixtureParity, BFloat16ComputeIsNearUpstreams) {
  ModelLoadOptions options;
  options.compute_dtype = torch::kBFloat16;
  LoadedModel l = load_expert(0, options);
  const WanModel* model = l.get<WanModel>();
  ASSERT_NE(model, nullptr);
  absl::StatusOr<torch::Tensor> out =
      model->forward(io_.get("fwd.hidden_states"), io_.get("fwd.timestep"), io_.get("fwd.encoder_hidden_states"));
  ASSERT_THAT(out, IsOk());
  EXPECT_EQ(out->scalar_type(), torch::kBFloat16);
  const double to_fwd = max_abs_diff(out->to(torch::kFloat32), io_.get("fwd.out"));
  const double to_bf16 = max_abs_diff(out->to(torch::kFloat32), io_.get("fwd.out_bf16").to(torch::kFloat32));
  std::printf("bfloat16 forward: vs fwd.out %.3g, vs fwd.out_bf16 %.3g (upstream bf16 vs f64: %.3g)\n", to_fwd, to_bf16,
              stats_["fwd_bf16"].get<double>());
  EXPECT_LT(to_fwd, 4 * stats_["fwd_bf16"].get<double>());
}

// Without a max_sequence_length the predictor zero-pads the text to
// WanPipeline's 512 rows, which are attended: the same as a forward over the
// padded text, and not the same as one over the bare text.
TEST_P(WanFixtureParity, PredictorPadsTheTextAsThePipeline) {
  LoadedModel l = load_expert(0);
  const WanModel* model = l.get<WanModel>();
  ASSERT_NE(model, nullptr);
  const torch::Tensor latents = io_.get("fwd.hidden_states"), t = io_.get("fwd.timestep");
  const torch::Tensor text = io_.get("fwd.encoder_hidden_states");
  Conditioning c;
  c.tensors["encoder_hidden_states"] = text[0];
  absl::StatusOr<FlowPredictor> predict = model->flow_predictor(c, nullptr);
  ASSERT_THAT(predict, IsOk());
  absl::StatusOr<FlowPrediction> p = (*predict)(latents[0], t[0].item<float>(), false);
  ASSERT_THAT(p, IsOk());
  ASSERT_LT(text.size(1), kWanDefaultTextLength);
  const torch::Tensor padded =
      torch::cat({text, torch::zeros({1, kWanDefaultTextLength - text.size(1), text.size(2)})}, 1);
  absl::StatusOr<torch::Tensor> direct = model->forward(latents, t, padded);
  ASSERT_THAT(direct, IsOk());
  EXPECT_EQ(max_abs_diff(p->positive, (*direct)[0]), 0.0);
  EXPECT_GT(max_abs_diff(p->positive, io_.get("fwd.out")[0]), 1e-4) << "the padding rows must count";
}

TEST_P(WanFixtureParity, SeededNoiseIsThePipelines) {
  const torch::Tensor noise = io_.get("loop.noise");
  const uint64_t seed = read_json_file(dir() + "/variant.json").value("seed", uint64_t{0}) + 2;
  EXPECT_EQ(max_abs_diff(seeded_noise(noise.sizes().vec(), seed), noise), 0.0);
}

TEST_P(WanFixtureParity, ActivationEstimateIsPositiveAndGrowsWithFrames) {
  LoadedModel l = load_expert(0);
  const WanModel* model = l.get<WanModel>();
  ASSERT_NE(model, nullptr);
  ActivationQuery q;
  q.latent_shape = io_.get("loop.noise")[0].sizes().vec();
  q.batch = 2;
  q.text_tokens = io_.get("loop.prompt_embeds").size(1);
  q.denoise_loop = true;
  const ActivationEstimate small = model->estimate_activations(q);
  q.latent_shape[1] *= 4;
  const ActivationEstimate large = model->estimate_activations(q);
  EXPECT_GT(small.bytes, 0);
  EXPECT_GT(large.bytes, small.bytes);
  const std::optional<ActivationQuery> step_q =
      model->step_activation_query({{"hidden_states", io_.get("batch.hidden_states")},
                                    {"encoder_hidden_states", io_.get("batch.encoder_hidden_states")}});
  ASSERT_TRUE(step_q.has_value());
  EXPECT_EQ(step_q->batch, io_.get("batch.hidden_states").size(0));
}

// The fixture's loop through the generic DenoiseRun: the model's own
// schedule (its scheduler_config.json), the text zero-padded to the
// fixture's length, CFG as WanPipeline does it. With two experts (Wan 2.2)
// the run has two segments: the steps whose timestep is at or above
// boundary_ratio * num_train_timesteps run transformer at guidance_scale,
// the rest transformer_2 at guidance_scale_2, one solver state across both.
TEST_P(WanFixtureParity, FourStepLoop) {
  const nlohmann::json variant = read_json_file(dir() + "/variant.json");
  const int experts = variant.value("experts", 1);
  ASSERT_TRUE(experts == 1 || experts == 2);
  LoadedModel first = load_expert(0), second;
  const WanModel* models[2] = {first.get<WanModel>(), nullptr};
  ASSERT_NE(models[0], nullptr);
  if (experts == 2) {
    second = load_expert(1);
    models[1] = second.get<WanModel>();
    ASSERT_NE(models[1], nullptr);
  }
  const torch::Tensor guidance = io_.get("loop.guidance_scale").to(torch::kFloat64);
  const double g1 = guidance[0].item<double>();
  const double g2 = guidance.numel() > 1 ? guidance[1].item<double>() : g1;
  double boundary = 0;  // timesteps at or above it go to the first expert
  if (experts == 2) {
    const nlohmann::json index = read_json_file(dir() + "/model_index_fragment.json");
    const nlohmann::json scheduler = read_json_file(dir() + "/scheduler_config.json");
    boundary = index.at("boundary_ratio").get<double>() * scheduler.value("num_train_timesteps", 1000);
  }

  const torch::Tensor prompt = io_.get("loop.prompt_embeds")[0], negative = io_.get("loop.negative_prompt_embeds")[0];
  Conditioning pos, neg;
  pos.tensors["encoder_hidden_states"] = prompt;
  neg.tensors["encoder_hidden_states"] = negative;
  // The fixture's text is already zero-padded to its length.
  pos.scalars["max_sequence_length"] = neg.scalars["max_sequence_length"] = static_cast<double>(prompt.size(0));
  std::vector<FlowPredictor> predictors;
  for (int e = 0; e < experts; ++e) {
    absl::StatusOr<FlowPredictor> p = models[e]->flow_predictor(pos, &neg);
    ASSERT_THAT(p, IsOk());
    predictors.push_back(*p);
  }
  DenoiseRequest request;
  request.initial_latents = io_.get("loop.noise")[0];
  request.schedule = models[0]->default_schedule(request.initial_latents.sizes().vec());
  request.schedule.steps = static_cast<int>(io_.get("loop.timesteps").numel());
  request.guidance_scale = g1;
  request.has_negative = true;
  std::vector<int> used;
  DenoiseOptions options;
  options.keep_history = true;
  options.on_step = [&](const StepEvent& e) { used.push_back(e.segment); };
  // One run in segments, as Engine::denoise drives the experts.
  absl::StatusOr<DenoiseRun> run = DenoiseRun::start(models[0]->flow_convention(), request);
  ASSERT_THAT(run, IsOk());
  const int switch_at = experts == 2 ? first_step_below(run->schedule(), static_cast<float>(boundary), 0)
                                     : run->schedule().steps();
  if (switch_at > 0) {
    ASSERT_THAT(run->run(predictors[0], g1, switch_at, 0, options), IsOk());
  }
  if (switch_at < run->schedule().steps()) {
    ASSERT_THAT(run->run(predictors[1], g2, run->schedule().steps(), 1, options), IsOk());
  }
  const std::optional<DenoiseResult> r = std::move(*run).finish();

  EXPECT_EQ(max_abs_diff(torch::tensor(r->schedule.sigmas), io_.get("loop.sigmas")), 0.0) << "sigmas";
  EXPECT_EQ(max_abs_diff(torch::tensor(r->schedule.timesteps), io_.get("loop.timesteps")), 0.0) << "timesteps";
  const torch::Tensor model_t = io_.get("loop.model_t"), expert = io_.get("loop.expert");
  ASSERT_EQ(used.size(), static_cast<size_t>(request.schedule.steps));
  for (int i = 0; i < request.schedule.steps; ++i) {
    EXPECT_EQ(model_time(models[0]->flow_convention().time, r->schedule.timesteps[i]), model_t[i].item<float>()) << i;
    EXPECT_EQ(used[i], static_cast<int>(expert[i].item<float>())) << "expert at step " << i;
  }
  const double steps_diff = max_abs_diff(torch::stack(r->history), io_.get("loop.latents"));
  const double final_diff = max_abs_diff(r->latents, io_.get("loop.final")[0]);
  std::printf("4-step loop (%d expert%s): max abs diff per step %.3g, final %.3g\n", experts, experts > 1 ? "s" : "",
              steps_diff, final_diff);
  EXPECT_LT(steps_diff, kWanTolerance);
  EXPECT_LT(final_diff, kWanTolerance);
}

// The same loop as a client asks for it: one Denoise through the Engine,
// video latents [C, F, H, W], the model's own schedule from its folder, and
// for Wan 2.2 the engine's switch to expert_2 at the boundary with its own
// guidance scale.
TEST_P(WanFixtureParity, FourStepLoopThroughTheEngine) {
  const nlohmann::json variant = read_json_file(dir() + "/variant.json");
  const int experts = variant.value("experts", 1);
  for (int e = 0; e < experts; ++e) {
    const WanExpertFiles files = wan_expert_files(dir(), e);
    wan_model_folder(tmp_, dir(), files.config, files.weights_dir, e == 0 ? "models/high" : "models/low");
  }
  EngineOptions o;
  o.models_dir = tmp_.path("models");
  o.fp8.format.reset();  // the fixture's float32 run
  std::unique_ptr<Budget> ram;
  std::unique_ptr<Engine> engine;
  ASSERT_THAT(::diffusiond::testing::start_engine(o, int64_t{1} << 30, &ram, &engine), IsOk());
  ModelLoadRequest load;
  load.path = "high";
  ASSERT_THAT(engine->load(load), IsOk());

  const torch::Tensor guidance = io_.get("loop.guidance_scale").to(torch::kFloat64);
  EngineDenoiseRequest r;
  r.model = ModelHandle::by_id("high");
  r.initial_latents = io_.get("loop.noise")[0];
  r.steps = static_cast<int>(io_.get("loop.timesteps").numel());
  r.guidance_scale = guidance[0].item<double>();
  const torch::Tensor prompt = io_.get("loop.prompt_embeds")[0];
  r.positive.tensors["encoder_hidden_states"] = prompt;
  Conditioning negative;
  negative.tensors["encoder_hidden_states"] = io_.get("loop.negative_prompt_embeds")[0];
  r.positive.scalars["max_sequence_length"] = negative.scalars["max_sequence_length"] =
      static_cast<double>(prompt.size(0));  // the fixture's text is already padded
  r.negative = negative;
  if (experts == 2) {
    r.later_segments.push_back({"low",  // loaded by the switch
                                read_json_file(dir() + "/model_index_fragment.json").at("boundary_ratio").get<double>(),
                                guidance[1].item<double>()});
  }
  std::vector<int> used;
  DenoiseOptions options;
  options.on_step = [&](const StepEvent& e) { used.push_back(e.segment); };
  absl::StatusOr<torch::Tensor> latents = engine->denoise(r, options);
  ASSERT_THAT(latents, IsOk());
  const torch::Tensor expert = io_.get("loop.expert");
  ASSERT_EQ(used.size(), static_cast<size_t>(expert.numel()));
  for (size_t i = 0; i < used.size(); ++i) EXPECT_EQ(used[i], static_cast<int>(expert[i].item<float>())) << i;
  EXPECT_LT(max_abs_diff(*latents, io_.get("loop.final")[0]), kWanTolerance);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, WanFixtureParity, ::testing::Values(kWan21Fixture, kWan22Fixture),
                         [](const ::testing::TestParamInfo<WanFixture>& info) {
                           return std::string(info.param.name == std::string("wan-tiny") ? "Wan" : "Wan22");
                         });

// Single files are recognised by their tensor names, with or without the
// prefix; the config read from shapes needs head_dim, which it assumes.
TEST(WanFamily, RecognisesSingleFilesAndMapsEveryOriginalName) {
  const std::string dir = wan_folder(kWan21Fixture);
  const nlohmann::json stats = read_json_file(dir + "/stats.json");
  ASSERT_FALSE(stats["sf_to_diffusers"].empty());
  for (const auto& item : stats["sf_to_diffusers"].items()) {
    const std::string original = item.key(), diffusers = item.value().get<std::string>();
    EXPECT_EQ(wan_canonical_name(original).value_or(""), diffusers) << original;
    EXPECT_EQ(wan_canonical_name("model.diffusion_model." + original).value_or(""), diffusers) << original;
    EXPECT_EQ(wan_canonical_name(diffusers).value_or(""), diffusers) << diffusers;
  }
  absl::StatusOr<std::unique_ptr<Checkpoint>> file = Checkpoint::open(dir + "/single_file.safetensors");
  ASSERT_THAT(file, IsOk());
  const ModelFamily* family = find_model_family(**file);
  ASSERT_NE(family, nullptr);
  EXPECT_EQ(family->name(), kWanArchitecture);
}

TEST(WanConfig, RefusesImageToVideoAndBadFieldsNamingThem) {
  EXPECT_THAT(parse_wan_config(R"({"_class_name": "WanTransformer3DModel"})", "c.json"), IsOk());
  const std::vector<std::pair<const char*, const char*>> bad = {
      {R"({"image_dim": 1280})", "image_dim is 1280; only the text-to-video"},
      {R"({"added_kv_proj_dim": 5120})", "added_kv_proj_dim is 5120"},
      {R"({"qk_norm": "rms_norm"})", "qk_norm"},
      {R"({"num_layers": 0})", "num_layers is 0, expected a positive integer"},
      {R"({"patch_size": [1, 2]})", "expected a list of 3 integers"},
      {R"({"attention_head_dim": 4})", "attention_head_dim is 4"},
      {R"({"_class_name": "FluxTransformer2DModel"})", "expected \"WanTransformer3DModel\""},
  };
  for (const auto& [json, message] : bad) {
    EXPECT_THAT(parse_wan_config(json, "c.json"),
                StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("c.json"), HasSubstr(message))))
        << json;
  }
}

}  // namespace
}  // namespace diffusiond
