// Parity of the FLUX port with upstream diffusers, on the reference fixture
// (DIFFUSIOND_FLUX_FIXTURE, default the shared flux-tiny): the single
// forward from every weight format (diffusers folder, original single file,
// the same with ComfyUI's "model.diffusion_model." prefix, scaled fp8), the
// batched forward, FP8 storage, the RoPE tables and the latent packing.
// Sizes, counts and guidance come from the fixture's config.json and
// io.safetensors, so another fixture of the same layout passes unchanged.
//
// Tolerance: 1e-5 absolute. The fixture's float32 noise floor (float64
// runs against the float32 one) is ~5e-7 on outputs of magnitude ~2.4; the
// margin allows libtorch's other summation orders, while a real mistake (a
// swapped modulation half, a wrong RoPE pairing or eps) moves outputs by
// 1e-3 or more.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>

#include "core/checkpoint/safetensors_writer.h"
#include "core/engine/model_admission.h"
#include "core/models/flux/flux_family.h"
#include "core/models/flux/flux_latents.h"
#include "core/models/flux/flux_model.h"
#include "core/models/flux/flux_params.h"
#include "core/models/flux/flux_rope.h"
#include "core/denoise/denoise_loop.h"
#include "core/util/file_text.h"
#include "core/util/json.h"
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
using ::diffusiond::testing::TempDir;
using ::diffusiond::testing::TensorFile;

constexpr double kFluxTolerance = 1e-5;

std::string flux_fixture() { return ::diffusiond::testing::fixture_folder("DIFFUSIOND_FLUX_FIXTURE", "flux-tiny"); }

// The loop's noise seed: the weights' seed + 2 (variant.json "seed").
uint64_t config_seed() {
  absl::StatusOr<std::string> text = read_text_file(flux_fixture() + "/variant.json");
  EXPECT_THAT(text, IsOk());
  absl::StatusOr<nlohmann::json> variant = parse_json_strict(text.ok() ? *text : "{}", "variant.json");
  EXPECT_THAT(variant, IsOk());
  return variant.ok() ? variant->value("seed", uint64_t{0}) + 2 : 0;
}

FluxConfig flux_fixture_config() {
  absl::StatusOr<std::string> text = read_text_file(flux_fixture() + "/config.json");
  EXPECT_THAT(text, IsOk());
  absl::StatusOr<FluxConfig> config = parse_flux_config(text.ok() ? *text : "{}", "config.json");
  EXPECT_THAT(config, IsOk());
  return config.ok() ? *config : FluxConfig();
}

// Rewrites `from` with every name prefixed, as ComfyUI full checkpoints carry them.
std::string prefixed_copy(const std::string& from, const std::string& to, const std::string& prefix) {
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

enum class FluxSource { kDiffusersFolder, kSingleFile, kPrefixedSingleFile, kScaledFp8File };

class FluxParity : public ::testing::TestWithParam<FluxSource> {
 protected:
  // Loads the model from this test's source; `model` is set when it is FLUX.
  LoadedModel load(bool fp8_storage, torch::ScalarType compute_dtype = torch::kFloat32) {
    ModelLoadOptions options;
    options.compute_dtype = compute_dtype;
    if (fp8_storage) options.fp8.format = Fp8Format::kE4M3Fn;
    LoadedModel l = load_test_model(path_for(GetParam()), options,
                                    GetParam() == FluxSource::kDiffusersFolder ? "" : flux_fixture() + "/config.json");
    EXPECT_NE(l.get<FluxModel>(), nullptr);
    return l;
  }

  std::string path_for(FluxSource source) {
    const std::string dir = flux_fixture();
    switch (source) {
      case FluxSource::kDiffusersFolder:
        // The fixture keeps config.json beside transformer/: lay out a model folder with links.
        std::filesystem::create_symlink(dir + "/config.json", tmp_.path("config.json"));
        std::filesystem::create_symlink(dir + "/transformer/diffusion_pytorch_model.safetensors",
                                        tmp_.path("diffusion_pytorch_model.safetensors"));
        std::filesystem::create_symlink(dir + "/scheduler_config.json", tmp_.path("scheduler_config.json"));
        return tmp_.path();
      // A single file's RoPE split is not in its shapes: each load names the
      // fixture's config.json, as a client would.
      case FluxSource::kSingleFile: return dir + "/single_file.safetensors";
      case FluxSource::kPrefixedSingleFile:
        // The copy gets the fixture's scheduler_config.json beside it too:
        // without it the loop would run FLUX.1-dev's default schedule, not
        // the fixture's.
        std::filesystem::create_symlink(dir + "/scheduler_config.json", tmp_.path("scheduler_config.json"));
        return prefixed_copy(dir + "/single_file.safetensors", tmp_.path("comfy.safetensors"), "model.diffusion_model.");
      case FluxSource::kScaledFp8File: return dir + "/single_file_scaled_fp8.safetensors";
    }
    return "";
  }

  // The inputs "<prefix>.*" of io.safetensors; guidance only for a guidance-distilled model.
  FluxInputs inputs(const std::string& prefix) const {
    FluxInputs in;
    in.hidden_states = io_.get(prefix + ".hidden_states");
    in.encoder_hidden_states = io_.get(prefix + ".encoder_hidden_states");
    in.pooled_projections = io_.get(prefix + ".pooled_projections");
    in.timestep = io_.get(prefix + ".timestep");
    in.img_ids = io_.get("fwd.img_ids");
    in.txt_ids = io_.get("fwd.txt_ids");
    if (config_.guidance_embeds) in.guidance = io_.get(prefix + ".guidance");
    return in;
  }

  TempDir tmp_;
  TensorFile io_{flux_fixture() + "/io.safetensors"};
  FluxConfig config_ = flux_fixture_config();
};

double forward_diff(const FluxModel& model, const FluxInputs& in, const torch::Tensor& expected) {
  absl::StatusOr<torch::Tensor> out = model.forward(in);
  EXPECT_THAT(out, IsOk());
  if (!out.ok()) return 1e9;
  EXPECT_EQ(out->sizes(), expected.sizes());
  EXPECT_EQ(out->scalar_type(), torch::kFloat32);
  return max_abs_diff(*out, expected);
}

// bfloat16 compute on the CPU: within a few times the distance of the
// fixture's own bfloat16 run (stats.json fwd_bf16) from the float64 forward.
TEST_P(FluxParity, Bfloat16ForwardStaysNearUpstreams) {
  if (GetParam() == FluxSource::kScaledFp8File) GTEST_SKIP() << "the fixture's bfloat16 run used the bf16 weights";
  LoadedModel l = load(/*fp8_storage=*/false, torch::kBFloat16);
  const FluxModel* model = l.get<FluxModel>();
  ASSERT_NE(model, nullptr);
  absl::StatusOr<torch::Tensor> out = model->forward(inputs("fwd"));
  ASSERT_THAT(out, IsOk());
  EXPECT_EQ(out->scalar_type(), torch::kBFloat16);
  const double upstream = testing::read_json_file(flux_fixture() + "/stats.json").at("fwd_bf16").get<double>();
  const double diff = max_abs_diff(*out, io_.get("fwd.out_f64"));
  std::printf("bfloat16 forward vs fwd.out_f64: %.3g (upstream's bfloat16: %.3g, vs ours %.3g)\n", diff, upstream,
              max_abs_diff(*out, io_.get("fwd.out_bf16")));
  EXPECT_LT(diff, 3 * upstream);
}

TEST_P(FluxParity, SingleForward) {
  LoadedModel l = load(/*fp8_storage=*/false);
  const FluxModel* model = l.get<FluxModel>();
  ASSERT_NE(model, nullptr);
  const std::string expected = GetParam() == FluxSource::kScaledFp8File ? "fwd.out_fp8_scaled" : "fwd.out";
  const double diff = forward_diff(*model, inputs("fwd"), io_.get(expected));
  std::printf("single forward vs %s: max abs diff %.3g\n", expected.c_str(), diff);
  EXPECT_LT(diff, kFluxTolerance);
}

TEST_P(FluxParity, BatchedForward) {
  if (GetParam() == FluxSource::kScaledFp8File) GTEST_SKIP() << "the fixture has no scaled-fp8 batch output";
  LoadedModel l = load(false);
  const FluxModel* model = l.get<FluxModel>();
  ASSERT_NE(model, nullptr);
  const double diff = forward_diff(*model, inputs("batch"), io_.get("batch.out"));
  std::printf("batched forward vs batch.out: max abs diff %.3g\n", diff);
  EXPECT_LT(diff, kFluxTolerance);
}

// Our FP8 storage rounds layer weights only (biases stay dense): that is
// fwd.out_fp8, not diffusers' layerwise casting (fwd.out_fp8_lwc, biases too).
TEST_P(FluxParity, Fp8StorageForward) {
  if (GetParam() == FluxSource::kScaledFp8File) GTEST_SKIP() << "already FP8: see SingleForward";
  LoadedModel l = load(/*fp8_storage=*/true);
  const FluxModel* model = l.get<FluxModel>();
  ASSERT_NE(model, nullptr);
  EXPECT_GT(model->weights().fp8_count(), 0);
  absl::StatusOr<torch::Tensor> out = model->forward(inputs("fwd"));
  ASSERT_THAT(out, IsOk());
  const double diff = max_abs_diff(*out, io_.get("fwd.out_fp8"));
  std::printf("FP8-storage forward vs fwd.out_fp8: %.3g (vs fwd.out_fp8_lwc: %.3g)\n", diff,
              max_abs_diff(*out, io_.get("fwd.out_fp8_lwc")));
  EXPECT_LT(diff, kFluxTolerance);
}

TEST_P(FluxParity, StepMatchesForward) {
  LoadedModel l = load(false);
  const FluxModel* model = l.get<FluxModel>();
  ASSERT_NE(model, nullptr);
  const FluxInputs in = inputs("fwd");
  NamedTensors named = {{"hidden_states", in.hidden_states}, {"encoder_hidden_states", in.encoder_hidden_states},
                        {"pooled_projections", in.pooled_projections}, {"timestep", in.timestep},
                        {"img_ids", in.img_ids}, {"txt_ids", in.txt_ids}};
  if (config_.guidance_embeds) named["guidance"] = in.guidance;
  absl::StatusOr<NamedTensors> out = model->step(named);
  ASSERT_THAT(out, IsOk());
  absl::StatusOr<torch::Tensor> direct = model->forward(in);
  ASSERT_THAT(direct, IsOk());
  EXPECT_EQ(max_abs_diff(out->at("out"), *direct), 0.0);
}

INSTANTIATE_TEST_SUITE_P(FluxParityFormats, FluxParity,
                         ::testing::Values(FluxSource::kDiffusersFolder, FluxSource::kSingleFile,
                                           FluxSource::kPrefixedSingleFile, FluxSource::kScaledFp8File),
                         [](const auto& info) {
                           switch (info.param) {
                             case FluxSource::kDiffusersFolder: return "DiffusersFolder";
                             case FluxSource::kSingleFile: return "SingleFile";
                             case FluxSource::kPrefixedSingleFile: return "PrefixedSingleFile";
                             case FluxSource::kScaledFp8File: return "ScaledFp8File";
                           }
                           return "";
                         });

TEST(FluxParityLatents, PackUnpackAndImageIds) {
  TensorFile io(flux_fixture() + "/io.safetensors");
  const torch::Tensor latents = io.get("pack.latents"), packed = io.get("pack.packed");
  absl::StatusOr<torch::Tensor> ours = pack_latents(latents);
  ASSERT_THAT(ours, IsOk());
  EXPECT_EQ(ours->sizes(), packed.sizes());
  EXPECT_EQ(max_abs_diff(*ours, packed), 0.0);
  const int64_t h = latents.size(2), w = latents.size(3);
  absl::StatusOr<torch::Tensor> back = unpack_latents(packed, h, w);
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(back->sizes(), latents.sizes());
  EXPECT_EQ(max_abs_diff(*back, latents), 0.0);
  absl::StatusOr<torch::Tensor> ids = latent_image_ids(h, w);
  ASSERT_THAT(ids, IsOk());
  EXPECT_EQ(ids->sizes(), io.get("pack.img_ids").sizes());
  EXPECT_EQ(max_abs_diff(*ids, io.get("pack.img_ids")), 0.0);
  EXPECT_EQ(max_abs_diff(*ids, io.get("fwd.img_ids")), 0.0);
}

TEST(FluxParityRope, TablesMatchUpstreamBitExactly) {
  TensorFile io(flux_fixture() + "/io.safetensors");
  const auto [cos, sin] = flux_rope_tables(torch::cat({io.get("fwd.txt_ids"), io.get("fwd.img_ids")}, 0),
                                           flux_fixture_config().axes_dims_rope);
  // Upstream repeats each value for the pair (2j, 2j+1).
  EXPECT_EQ(max_abs_diff(cos.repeat_interleave(2, 1), io.get("dbg.rope_cos")), 0.0);
  EXPECT_EQ(max_abs_diff(sin.repeat_interleave(2, 1), io.get("dbg.rope_sin")), 0.0);
}

// The fixture's loop through the generic denoise loop: noise drawn from the
// seed, the model's own schedule (its scheduler_config.json, dynamic shift
// for FLUX.1-dev), the predictor's packing, and Euler steps on the
// velocity. Compares the schedule bit for bit, then every step's latents
// (packed, as the fixture holds them) and the final ones.
TEST_P(FluxParity, FourStepLoop) {
  if (GetParam() == FluxSource::kScaledFp8File) GTEST_SKIP() << "the fixture's loop ran the bf16 weights";
  LoadedModel l = load(false);
  const FluxModel* model = l.get<FluxModel>();
  ASSERT_NE(model, nullptr);
  const torch::Tensor noise = io_.get("loop.noise");
  DenoiseRequest request;
  request.latent_shape = noise[0].sizes().vec();
  request.seed = config_seed();
  request.schedule = model->default_schedule(request.latent_shape);
  request.schedule.steps = static_cast<int>(io_.get("loop.timesteps").numel());
  Conditioning c;
  c.tensors["encoder_hidden_states"] = io_.get("loop.encoder_hidden_states")[0];
  c.tensors["pooled_projections"] = io_.get("loop.pooled_projections")[0];
  if (config_.guidance_embeds) c.scalars["guidance"] = io_.get("loop.guidance_scale").item<double>();
  absl::StatusOr<FlowPredictor> predict = model->flow_predictor(c, nullptr);
  ASSERT_THAT(predict, IsOk());
  DenoiseOptions options;
  options.keep_history = true;
  absl::StatusOr<DenoiseResult> r = denoise(*predict, model->flow_convention(), request, options);
  ASSERT_THAT(r, IsOk());

  EXPECT_EQ(max_abs_diff(torch::tensor(r->schedule.sigmas), io_.get("loop.sigmas")), 0.0) << "sigmas";
  EXPECT_EQ(max_abs_diff(torch::tensor(r->schedule.timesteps), io_.get("loop.timesteps")), 0.0) << "timesteps";
  const torch::Tensor model_t = io_.get("loop.model_t");
  for (int i = 0; i < request.schedule.steps; ++i) {
    EXPECT_EQ(model_time(model->flow_convention().time, r->schedule.timesteps[i]), model_t[i].item<float>()) << i;
  }
  absl::StatusOr<torch::Tensor> history = pack_latents(torch::stack(r->history));
  ASSERT_THAT(history, IsOk());
  absl::StatusOr<torch::Tensor> final_packed = pack_latents(r->latents.unsqueeze(0));
  ASSERT_THAT(final_packed, IsOk());
  const double steps_diff = max_abs_diff(*history, io_.get("loop.latents"));
  const double final_diff = max_abs_diff(*final_packed, io_.get("loop.final"));
  const double unpacked_diff = max_abs_diff(r->latents, io_.get("loop.final_unpacked")[0]);
  std::printf("4-step loop: max abs diff per step %.3g, final %.3g, unpacked %.3g\n", steps_diff, final_diff,
              unpacked_diff);
  EXPECT_LT(steps_diff, kFluxTolerance);
  EXPECT_LT(final_diff, kFluxTolerance);
  EXPECT_LT(unpacked_diff, kFluxTolerance);
}

TEST(FluxParityLoop, SeededNoiseIsThePipelines) {
  TensorFile io(flux_fixture() + "/io.safetensors");
  const torch::Tensor noise = io.get("loop.noise");
  EXPECT_EQ(max_abs_diff(seeded_noise(noise.sizes().vec(), config_seed()), noise), 0.0);
  absl::StatusOr<torch::Tensor> packed = pack_latents(noise);
  ASSERT_THAT(packed, IsOk());
  EXPECT_EQ(max_abs_diff(*packed, io.get("loop.noise_packed")), 0.0);
}

// A single file's config comes from its shapes, except the RoPE split:
// FLUX.1's is assumed only for head_dim 128, any other fails clearly.
TEST(FluxParityInference, SingleFileConfigIsInferredOrRefusedClearly) {
  const FluxConfig expected = flux_fixture_config();
  // Alone in a folder: the fixture's own folder holds a config.json it would use.
  TempDir tmp;
  std::filesystem::create_symlink(flux_fixture() + "/single_file.safetensors", tmp.path("flux.safetensors"));
  absl::StatusOr<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(tmp.path("flux.safetensors"));
  ASSERT_THAT(ckpt, IsOk());
  ASSERT_EQ(find_model_family(**ckpt), flux_family());
  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe = flux_family()->recipe(**ckpt);
  if (expected.attention_head_dim != 128) {
    EXPECT_FALSE(recipe.ok());
    EXPECT_EQ(recipe.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(recipe.status().message()), ::testing::HasSubstr("axes_dims_rope is not stored"));
    return;
  }
  ASSERT_THAT(recipe, IsOk());
  FluxConfig described = expected;
  described.assumed = {"patch_size 1", "axes_dims_rope [16, 56, 56]"};
  EXPECT_THAT((*recipe)->describe(), ::testing::HasSubstr(described.describe()));
}

// Every original key lands on the diffusers names upstream's converter
// gives it (stats.json "sf_to_diffusers", which lists a fused tensor's
// parts as a set: their row order is checked by the forwards).
TEST(FluxParityKeyMap, OriginalKeysMapAsUpstream) {
  absl::StatusOr<std::string> stats_text = read_text_file(flux_fixture() + "/stats.json");
  ASSERT_THAT(stats_text, IsOk());
  absl::StatusOr<nlohmann::json> stats = parse_json_strict(*stats_text, "stats.json");
  ASSERT_THAT(stats, IsOk());
  const FluxConfig config = flux_fixture_config();
  int checked = 0;
  for (const auto& [original, expected] : stats->at("sf_to_diffusers").items()) {
    const std::optional<std::string> canonical = flux_canonical_name(original);
    ASSERT_TRUE(canonical.has_value()) << original;
    std::vector<std::string> ours = {*canonical};
    for (const FusedSplit& split : flux_fused_splits(config, {*canonical})) {
      ours.clear();
      for (const auto& part : split.parts) ours.push_back(part.first);
    }
    for (const auto& swap : flux_swapped_halves({*canonical})) ours = {swap.second};
    std::vector<std::string> theirs = expected.get<std::vector<std::string>>();
    std::sort(ours.begin(), ours.end());
    std::sort(theirs.begin(), theirs.end());
    EXPECT_EQ(ours, theirs) << original;
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

// FP8 storage picks the Linear weights upstream's layerwise casting would
// cast (stats.json "fp8_weights"), from the diffusers folder's headers.
TEST(FluxParitySelection, Fp8WeightsAreUpstreams) {
  absl::StatusOr<std::string> stats_text = read_text_file(flux_fixture() + "/stats.json");
  ASSERT_THAT(stats_text, IsOk());
  absl::StatusOr<nlohmann::json> stats = parse_json_strict(*stats_text, "stats.json");
  ASSERT_THAT(stats, IsOk());
  std::set<std::string> expected;
  for (const auto& name : stats->at("fp8_weights")) expected.insert(name.get<std::string>());
  TempDir tmp;
  std::filesystem::create_symlink(flux_fixture() + "/config.json", tmp.path("config.json"));
  std::filesystem::create_symlink(flux_fixture() + "/transformer/diffusion_pytorch_model.safetensors",
                                  tmp.path("diffusion_pytorch_model.safetensors"));
  absl::StatusOr<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(tmp.path());
  ASSERT_THAT(ckpt, IsOk());
  ModelLoadOptions options;
  options.fp8.format = Fp8Format::kE4M3Fn;
  absl::StatusOr<ModelPlan> plan = plan_model(**ckpt, options);
  ASSERT_THAT(plan, IsOk());
  std::set<std::string> fp8;
  for (const PlannedTensor& t : plan->plan.tensors) {
    if (t.action == PlannedTensor::Action::kFp8Encode) fp8.insert(t.name);
  }
  EXPECT_EQ(fp8, expected);
}

}  // namespace
}  // namespace diffusiond
