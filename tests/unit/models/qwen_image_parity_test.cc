// Parity of the Qwen-Image port with upstream diffusers, on the reference
// fixture (DIFFUSIOND_QWENIMAGE_FIXTURE, default the shared qwenimage-tiny):
// config and parameter table, FP8 selection, the single forward with its
// intermediates, the batched forward with a text mask, the FP8 checkpoint's
// forward, the RoPE tables, the latent packing, single-file recognition and
// the 4-step loop with true CFG and its norm rescale. Sizes and counts come
// from the fixture's config.json, stats.json and io.safetensors, so another
// fixture of the same layout passes unchanged.
//
// Tolerance: 1e-5 absolute. The fixture's float32 noise floor (float64
// runs against the float32 one) is ~5e-7 on outputs of magnitude ~2; the
// margin allows libtorch's other summation orders, while a real mistake (a
// swapped modulation chunk, a wrong RoPE centre or text offset) moves
// outputs by 1e-3 or more.
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
#include "core/models/flux/flux_latents.h"
#include "core/models/model_loader.h"
#include "core/models/qwen_image/qwen_image_family.h"
#include "core/models/qwen_image/qwen_image_model.h"
#include "core/models/qwen_image/qwen_image_params.h"
#include "core/models/qwen_image/qwen_image_rope.h"
#include "core/util/file_text.h"
#include "core/util/json.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/loaded_model.h"
#include "tests/testing/scaled_fp8_file.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tensor_file.h"
#include "tools/random_models/random_weights.h"

namespace diffusiond {
namespace qwen_image_parity_test {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::load_test_model;
using ::diffusiond::testing::LoadedModel;
using ::diffusiond::testing::max_abs_diff;
using ::diffusiond::testing::TempDir;
using ::diffusiond::testing::TensorFile;

constexpr double kTolerance = 1e-5;

std::string fixture() {
  return ::diffusiond::testing::fixture_folder("DIFFUSIOND_QWENIMAGE_FIXTURE", "qwenimage-tiny");
}

nlohmann::json read_json(const std::string& name) {
  return ::diffusiond::testing::read_json_file(fixture() + "/" + name);
}

QwenImageConfig fixture_config() {
  absl::StatusOr<std::string> text = read_text_file(fixture() + "/config.json");
  EXPECT_THAT(text, IsOk());
  absl::StatusOr<QwenImageConfig> config = parse_qwen_image_config(text.ok() ? *text : "{}", "config.json");
  EXPECT_THAT(config, IsOk());
  return config.ok() ? *config : QwenImageConfig();
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

class QwenImageParity : public ::testing::Test {
 protected:
  // Loads the fixture's `weights` folder; FP8 storage off.
  LoadedModel load(const std::string& weights = "transformer", torch::ScalarType dtype = torch::kFloat32) {
    ModelLoadOptions options;
    options.compute_dtype = dtype;
    LoadedModel l = load_test_model(model_folder(tmp_, weights), options);
    EXPECT_NE(l.get<QwenImageModel>(), nullptr);
    return l;
  }

  // The inputs "<prefix>.*" of io.safetensors; one image per item, its
  // patch grid from the fixture's latent H x W (pack.latents).
  QwenImageInputs inputs(const std::string& prefix, bool masked) const {
    QwenImageInputs in;
    in.hidden_states = io_.get(prefix + ".hidden_states");
    in.encoder_hidden_states = io_.get(prefix + ".encoder_hidden_states");
    in.timestep = io_.get(prefix + ".timestep");
    if (masked) in.encoder_hidden_states_mask = io_.get(prefix + ".encoder_hidden_states_mask");
    const torch::Tensor latents = io_.get("pack.latents");
    in.img_shapes = {{1, latents.size(3) / 2, latents.size(4) / 2}};
    return in;
  }

  TempDir tmp_;
  TensorFile io_{fixture() + "/io.safetensors"};
};

double forward_diff(const QwenImageModel& model, const QwenImageInputs& in, const torch::Tensor& expected,
                    NamedTensors* intermediates = nullptr) {
  absl::StatusOr<torch::Tensor> out = model.forward(in, intermediates);
  EXPECT_THAT(out, IsOk());
  if (!out.ok()) return 1e9;
  EXPECT_EQ(out->sizes(), expected.sizes());
  EXPECT_EQ(out->scalar_type(), torch::kFloat32);
  return max_abs_diff(*out, expected);
}

TEST(QwenImageParityConfig, TableIsTheCheckpointsAndCountsAsUpstream) {
  const QwenImageConfig config = fixture_config();
  const nlohmann::json stats = read_json("stats.json");
  EXPECT_EQ(config.inner_dim(), stats.at("inner_dim").get<int64_t>());
  const std::vector<ParamSpec> table = qwen_image_parameter_table(config);
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

TEST(QwenImageParityConfig, RefusesWhatThePortDoesNotImplement) {
  for (const char* flag : {"guidance_embeds", "use_additional_t_cond", "use_layer3d_rope"}) {
    absl::StatusOr<QwenImageConfig> c = parse_qwen_image_config(absl::StrCat("{\"", flag, "\": true}"), "c.json");
    EXPECT_FALSE(c.ok()) << flag;
    EXPECT_THAT(std::string(c.status().message()), ::testing::HasSubstr(flag));
  }
  EXPECT_FALSE(parse_qwen_image_config(R"({"axes_dims_rope": [16, 56, 54]})", "c.json").ok());
  EXPECT_FALSE(parse_qwen_image_config(R"({"_class_name": "FluxTransformer2DModel"})", "c.json").ok());
}

// FP8 storage picks exactly the layers upstream's layerwise casting casts
// (stats.json fp8.cast): their weights from the bf16 folder (our storage
// leaves every bias dense), weights and biases as stored in the FP8 folder.
TEST(QwenImageParitySelection, Fp8LayersAreUpstreams) {
  const nlohmann::json stats = read_json("stats.json");
  const std::set<std::string> cast = json_names(stats.at("fp8").at("cast"));
  std::set<std::string> cast_weights;
  for (const std::string& name : cast) {
    if (absl::EndsWith(name, ".weight")) cast_weights.insert(name);
  }
  EXPECT_FALSE(cast_weights.empty());
  const PrecisionDeclaration declared = qwen_image_precision_declaration();
  EXPECT_EQ(std::set<std::string>(declared.skip_patterns.begin(), declared.skip_patterns.end()),
            json_names(stats.at("fp8").at("skip_layerwise_casting_patterns")));
  for (const std::string weights : {"transformer", "transformer_fp8"}) {
    TempDir tmp;
    absl::StatusOr<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(model_folder(tmp, weights));
    ASSERT_THAT(ckpt, IsOk());
    ModelLoadOptions options;
    options.fp8.format = Fp8Format::kE4M3Fn;
    absl::StatusOr<ModelPlan> plan = plan_model(**ckpt, options);
    ASSERT_THAT(plan, IsOk());
    EXPECT_EQ(plan->family, qwen_image_family());
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

TEST_F(QwenImageParity, SingleForwardAndIntermediates) {
  LoadedModel l = load();
  const QwenImageModel* model = l.get<QwenImageModel>();
  ASSERT_NE(model, nullptr);
  NamedTensors got;
  const double diff = forward_diff(*model, inputs("fwd", false), io_.get("fwd.out"), &got);
  std::printf("single forward vs fwd.out: max abs diff %.3g (fwd.out_f64: %.3g)\n", diff,
              max_abs_diff(io_.get("fwd.out"), io_.get("fwd.out_f64")));
  EXPECT_LT(diff, kTolerance);
  // zero_cond_t appends the t = 0 row the reference images are modulated by.
  const torch::Tensor t = io_.get("fwd.timestep");
  const torch::Tensor time_in = fixture_config().zero_cond_t ? torch::cat({t, torch::zeros_like(t)}) : t;
  EXPECT_EQ(io_.get("dbg.time_in").sizes(), time_in.sizes());
  EXPECT_EQ(max_abs_diff(time_in, io_.get("dbg.time_in")), 0.0);
  std::vector<std::string> names = {"t_sinusoid", "temb", "img_in", "txt_norm", "txt_in", "norm_out"};
  for (int64_t i = 0; i < fixture_config().num_layers; ++i) {
    names.push_back(absl::StrCat("block", i, "_img"));
    names.push_back(absl::StrCat("block", i, "_txt"));
  }
  for (const std::string& name : names) {
    const torch::Tensor expected = io_.get("dbg." + name);
    ASSERT_EQ(got.count(name), 1u) << name;
    const torch::Tensor ours = got.at(name)[0];
    ASSERT_EQ(ours.sizes(), expected.sizes()) << name;
    EXPECT_LT(max_abs_diff(ours, expected), kTolerance) << name;
  }
}

TEST_F(QwenImageParity, BatchedForwardWithTextMask) {
  LoadedModel l = load();
  const QwenImageModel* model = l.get<QwenImageModel>();
  ASSERT_NE(model, nullptr);
  const double diff = forward_diff(*model, inputs("batch", true), io_.get("batch.out"));
  std::printf("batched forward vs batch.out: max abs diff %.3g\n", diff);
  EXPECT_LT(diff, kTolerance);
  // A mask of ones is no mask.
  QwenImageInputs ones = inputs("fwd", false);
  ones.encoder_hidden_states_mask = torch::ones({1, ones.encoder_hidden_states.size(1)});
  EXPECT_LT(forward_diff(*model, ones, io_.get("fwd.out")), kTolerance);
}

// The FP8 folder holds upstream's cast layers (weights and biases) as
// unscaled e4m3fn codes: its forward is upstream's layerwise-cast one.
TEST_F(QwenImageParity, Fp8CheckpointForward) {
  LoadedModel l = load("transformer_fp8");
  const QwenImageModel* model = l.get<QwenImageModel>();
  ASSERT_NE(model, nullptr);
  EXPECT_GT(model->weights().fp8_count(), 0);
  const double diff = forward_diff(*model, inputs("fwd", false), io_.get("fp8.out"));
  std::printf("FP8 checkpoint forward vs fp8.out: max abs diff %.3g\n", diff);
  EXPECT_LT(diff, kTolerance);
}

// A ComfyUI scaled-fp8 single file ("model.diffusion_model." + diffusers
// names, the config named beside it): its block weights load as FP8 codes
// with their per-tensor scales applied, so the forward equals the same
// weights dequantised to float32, and is no further from upstream's than
// three times upstream's own FP8 casting is.
TEST_F(QwenImageParity, ScaledFp8SingleFileAppliesItsScales) {
  const testing::ScaledFp8Copy copy = testing::write_scaled_fp8_copy(
      fixture() + "/transformer/diffusion_pytorch_model.safetensors", tmp_.path("scaled.safetensors"),
      tmp_.path("dequantized.safetensors"), "model.diffusion_model.", [](const TensorRecord& t) {
        return absl::StartsWith(t.name, "transformer_blocks.") && absl::EndsWith(t.name, ".weight") &&
               t.shape.size() == 2;
      });
  ASSERT_GT(copy.quantized, 0);
  const std::string config = fixture() + "/config.json";
  LoadedModel scaled = load_test_model(copy.scaled, {}, config);
  LoadedModel dequantized = load_test_model(copy.dequantized, {}, config);
  ASSERT_NE(scaled.get<QwenImageModel>(), nullptr);
  ASSERT_NE(dequantized.get<QwenImageModel>(), nullptr);
  EXPECT_EQ(scaled.get<QwenImageModel>()->weights().fp8_count(), copy.quantized);
  const QwenImageInputs in = inputs("fwd", false);
  absl::StatusOr<torch::Tensor> out = scaled.get<QwenImageModel>()->forward(in);
  ASSERT_THAT(out, IsOk());
  const double exact = forward_diff(*dequantized.get<QwenImageModel>(), in, *out);
  const double from_upstream = max_abs_diff(*out, io_.get("fwd.out"));
  const double upstream_fp8 = max_abs_diff(io_.get("fp8.out"), io_.get("fwd.out"));
  std::printf("scaled fp8 vs dequantised %.3g; vs fwd.out %.3g (upstream's FP8 cast: %.3g)\n", exact, from_upstream,
              upstream_fp8);
  EXPECT_LT(exact, kTolerance);
  EXPECT_LT(from_upstream, 3 * upstream_fp8);
}

// bfloat16 compute takes the composed (unfused) ops; upstream's own
// bfloat16 run is informative only (fwd.out_bf16, stats.json fwd_bf16 from
// float64), so ours must stay within a few times its distance.
TEST_F(QwenImageParity, Bfloat16ForwardStaysNearUpstreams) {
  LoadedModel l = load("transformer", torch::kBFloat16);
  const QwenImageModel* model = l.get<QwenImageModel>();
  ASSERT_NE(model, nullptr);
  absl::StatusOr<torch::Tensor> out = model->forward(inputs("fwd", false));
  ASSERT_THAT(out, IsOk());
  EXPECT_EQ(out->scalar_type(), torch::kBFloat16);
  const double upstream = read_json("stats.json").at("fwd_bf16").get<double>();
  const double diff = max_abs_diff(*out, io_.get("fwd.out_f64"));
  std::printf("bfloat16 forward vs fwd.out_f64: %.3g (upstream's bfloat16: %.3g, vs ours %.3g)\n", diff, upstream,
              max_abs_diff(*out, io_.get("fwd.out_bf16")));
  EXPECT_LT(diff, 3 * upstream);
}

TEST_F(QwenImageParity, StepMatchesForward) {
  LoadedModel l = load();
  const QwenImageModel* model = l.get<QwenImageModel>();
  ASSERT_NE(model, nullptr);
  const QwenImageInputs in = inputs("batch", true);
  const int64_t b = in.hidden_states.size(0);
  const QwenImageShape& grid = in.img_shapes[0];
  const torch::Tensor shapes = torch::tensor({grid[0], grid[1], grid[2]}, torch::kLong).unsqueeze(0).repeat({b, 1});
  NamedTensors named = {{"hidden_states", in.hidden_states},
                        {"encoder_hidden_states", in.encoder_hidden_states},
                        {"encoder_hidden_states_mask", in.encoder_hidden_states_mask},
                        {"timestep", in.timestep},
                        {"img_shapes", shapes}};
  absl::StatusOr<NamedTensors> out = model->step(named);
  ASSERT_THAT(out, IsOk());
  absl::StatusOr<torch::Tensor> direct = model->forward(in);
  ASSERT_THAT(direct, IsOk());
  EXPECT_EQ(max_abs_diff(out->at("out"), *direct), 0.0);
  // [B, N, 3]: N images per item, here one.
  named["img_shapes"] = shapes.unsqueeze(1);
  out = model->step(named);
  ASSERT_THAT(out, IsOk());
  EXPECT_EQ(max_abs_diff(out->at("out"), *direct), 0.0);
  named.erase("img_shapes");
  named["guidance"] = in.timestep;
  absl::StatusOr<NamedTensors> bad = model->step(named);
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), ::testing::HasSubstr("missing input \"img_shapes\""));
  EXPECT_THAT(std::string(bad.status().message()), ::testing::HasSubstr("unexpected input \"guidance\""));
}

TEST(QwenImageParityRope, TablesMatchUpstream) {
  TensorFile io(fixture() + "/io.safetensors");
  const torch::Tensor latents = io.get("pack.latents");
  const int64_t text_len = io.get("fwd.encoder_hidden_states").size(1);
  absl::StatusOr<QwenImageRope> rope =
      qwen_image_rope(fixture_config().axes_dims_rope, {{1, latents.size(3) / 2, latents.size(4) / 2}}, text_len);
  ASSERT_THAT(rope, IsOk());
  const double diff = std::max({max_abs_diff(rope->img_cos, io.get("dbg.rope_img_cos")),
                                max_abs_diff(rope->img_sin, io.get("dbg.rope_img_sin")),
                                max_abs_diff(rope->txt_cos, io.get("dbg.rope_txt_cos")),
                                max_abs_diff(rope->txt_sin, io.get("dbg.rope_txt_sin"))});
  std::printf("RoPE tables: max abs diff %.3g\n", diff);
  // float32 angles as upstream; cos/sin may differ in the last bit between
  // libtorch's kernels.
  EXPECT_LT(diff, 1e-6);
  EXPECT_FALSE(qwen_image_rope(fixture_config().axes_dims_rope, {{1, 64, 64}}, kQwenImageRopePositions).ok());
}

// An edit's reference images (img_shapes entries after the first) sit one
// frame further each, centred on their own grid; the text starts after the
// largest grid's half.
TEST(QwenImageParityRope, ReferenceImagesFollowOnTheFrameAxis) {
  const std::array<int64_t, 3> axes = fixture_config().axes_dims_rope;
  const int64_t text_len = 5;
  absl::StatusOr<QwenImageRope> both = qwen_image_rope(axes, {{1, 4, 6}, {1, 8, 2}}, text_len);
  absl::StatusOr<QwenImageRope> target = qwen_image_rope(axes, {{1, 4, 6}}, text_len);
  // Frame 1 of a 2-frame grid of the reference's size: its rows are the reference's.
  absl::StatusOr<QwenImageRope> frames = qwen_image_rope(axes, {{2, 8, 2}}, text_len);
  absl::StatusOr<QwenImageRope> tall = qwen_image_rope(axes, {{1, 8, 2}}, text_len);
  ASSERT_THAT(both, IsOk());
  ASSERT_THAT(target, IsOk());
  ASSERT_THAT(frames, IsOk());
  ASSERT_THAT(tall, IsOk());
  ASSERT_EQ(both->img_cos.size(0), 24 + 16);
  EXPECT_EQ(max_abs_diff(both->img_cos.narrow(0, 0, 24), target->img_cos), 0.0);
  EXPECT_EQ(max_abs_diff(both->img_sin.narrow(0, 0, 24), target->img_sin), 0.0);
  EXPECT_EQ(max_abs_diff(both->img_cos.narrow(0, 24, 16), frames->img_cos.narrow(0, 16, 16)), 0.0);
  EXPECT_EQ(max_abs_diff(both->img_sin.narrow(0, 24, 16), frames->img_sin.narrow(0, 16, 16)), 0.0);
  // max(4/2, 6/2, 8/2, 2/2) = 4: the reference's rows decide.
  EXPECT_EQ(max_abs_diff(both->txt_cos, tall->txt_cos), 0.0);
  EXPECT_GT(max_abs_diff(both->txt_cos, target->txt_cos), 0.0);
}

TEST(QwenImageParityLatents, PackAndUnpackAsThePipeline) {
  TensorFile io(fixture() + "/io.safetensors");
  const torch::Tensor latents = io.get("pack.latents"), packed = io.get("pack.packed");
  // The pipeline's latents carry a frame axis of 1: [B, 1, C, H, W].
  absl::StatusOr<torch::Tensor> ours = pack_latents(latents.squeeze(1));
  ASSERT_THAT(ours, IsOk());
  EXPECT_EQ(ours->sizes(), packed.sizes());
  EXPECT_EQ(max_abs_diff(*ours, packed), 0.0);
  absl::StatusOr<torch::Tensor> back = unpack_latents(packed, latents.size(3), latents.size(4));
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(max_abs_diff(back->unsqueeze(1), latents), 0.0);
}

// zero_cond_t (Qwen-Image-Edit-2511) modulates the reference images'
// tokens with the t = 0 embedding. The fixture's model with the flag set:
// one image per item is the plain forward; with a reference image after
// it, the output moves, except at t = 0, where both modulations agree.
TEST_F(QwenImageParity, ZeroCondTModulatesReferenceImagesAtTimeZero) {
  // The fixture's weights under its config with the flag off and on,
  // whichever the fixture's own is.
  const auto load_with = [&](bool zero_cond_t, const std::string& folder) {
    std::filesystem::create_directories(tmp_.path(folder));
    nlohmann::json config = read_json("config.json");
    config["zero_cond_t"] = zero_cond_t;
    EXPECT_THAT(write_text_file(tmp_.path(folder + "/config.json"), config.dump()), IsOk());
    std::filesystem::create_symlink(fixture() + "/transformer/diffusion_pytorch_model.safetensors",
                                    tmp_.path(folder + "/diffusion_pytorch_model.safetensors"));
    return load_test_model(tmp_.path(folder), ModelLoadOptions());
  };
  LoadedModel plain_load = load_with(false, "plain");
  const QwenImageModel* plain = plain_load.get<QwenImageModel>();
  ASSERT_NE(plain, nullptr);
  ASSERT_FALSE(plain->config().zero_cond_t);
  LoadedModel zero_load = load_with(true, "zero");
  const QwenImageModel* zero = zero_load.get<QwenImageModel>();
  ASSERT_NE(zero, nullptr);
  ASSERT_TRUE(zero->config().zero_cond_t);

  const QwenImageInputs single = inputs("fwd", false);
  absl::StatusOr<torch::Tensor> plain_single = plain->forward(single);
  ASSERT_THAT(plain_single, IsOk());
  EXPECT_EQ(forward_diff(*zero, single, *plain_single), 0.0);
  EXPECT_LT(forward_diff(*zero, single, io_.get("fwd.out")), kTolerance);

  QwenImageInputs edit = single;
  edit.hidden_states = torch::cat({single.hidden_states, single.hidden_states.flip(1)}, 1);
  edit.img_shapes.push_back(single.img_shapes[0]);
  absl::StatusOr<torch::Tensor> plain_out = plain->forward(edit);
  ASSERT_THAT(plain_out, IsOk());
  EXPECT_GT(forward_diff(*zero, edit, *plain_out), 1e-3);
  edit.timestep = torch::zeros_like(single.timestep);
  plain_out = plain->forward(edit);
  ASSERT_THAT(plain_out, IsOk());
  EXPECT_EQ(forward_diff(*zero, edit, *plain_out), 0.0);
}

// The transformer's file doubles as the original single file (upstream's
// single-file mapping is the identity): it is recognised alone, and its
// config inferred from shapes or, with a head_dim other than Qwen-Image's
// 128, refused clearly; with ComfyUI's prefix the names map back.
TEST(QwenImageParitySingleFile, RecognisedAndConfigInferredOrRefused) {
  TempDir tmp;
  std::filesystem::create_symlink(fixture() + "/transformer/diffusion_pytorch_model.safetensors",
                                  tmp.path("qwen_image.safetensors"));
  absl::StatusOr<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(tmp.path("qwen_image.safetensors"));
  ASSERT_THAT(ckpt, IsOk());
  ASSERT_EQ(find_model_family(**ckpt), qwen_image_family());
  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe = qwen_image_family()->recipe(**ckpt);
  const QwenImageConfig expected = fixture_config();
  if (expected.attention_head_dim != 128) {
    ASSERT_FALSE(recipe.ok());
    EXPECT_THAT(std::string(recipe.status().message()), ::testing::HasSubstr("axes_dims_rope is not stored"));
  } else {
    ASSERT_THAT(recipe, IsOk());
    QwenImageConfig described = expected;
    described.assumed = {"patch_size 2", "axes_dims_rope [16, 56, 56]"};
    EXPECT_THAT((*recipe)->describe(), ::testing::HasSubstr(described.describe()));
  }
  EXPECT_EQ(qwen_image_canonical_name("model.diffusion_model.img_in.weight"), "img_in.weight");
}

// The fixture's loop through the generic denoise loop: noise drawn from the
// seed, the model's own schedule (its scheduler_config.json: dynamic shift
// stretched to shift_terminal), the predictor's packing, true CFG with the
// per-token norm rescale against a masked negative prompt, and Euler steps.
TEST_F(QwenImageParity, FourStepLoopWithTrueCfg) {
  LoadedModel l = load();
  const QwenImageModel* model = l.get<QwenImageModel>();
  ASSERT_NE(model, nullptr);
  const torch::Tensor noise = io_.get("loop.noise");  // [1, 1, C, H, W]
  DenoiseRequest request;
  request.latent_shape = noise[0][0].sizes().vec();
  request.seed = read_json("variant.json").at("seed").get<uint64_t>() + 2;
  request.schedule = model->default_schedule(request.latent_shape);
  request.schedule.steps = static_cast<int>(io_.get("loop.timesteps").numel());
  request.guidance_scale = io_.get("loop.true_cfg_scale").item<double>();
  request.has_negative = true;
  EXPECT_EQ(request.schedule.image_seq_len, io_.get("loop.image_seq_len").item<int64_t>());
  Conditioning positive, negative;
  positive.tensors["encoder_hidden_states"] = io_.get("loop.prompt_embeds")[0];
  negative.tensors["encoder_hidden_states"] = io_.get("loop.negative_prompt_embeds")[0];
  negative.tensors["encoder_hidden_states_mask"] = io_.get("loop.negative_prompt_embeds_mask")[0];
  absl::StatusOr<FlowPredictor> predict = model->flow_predictor(positive, &negative);
  ASSERT_THAT(predict, IsOk());
  DenoiseOptions options;
  options.keep_history = true;
  absl::StatusOr<DenoiseResult> r = denoise(*predict, model->flow_convention(), request, options);
  ASSERT_THAT(r, IsOk());

  // numpy's float32/float64 scalar promotion may move the last bit (README).
  EXPECT_LT(max_abs_diff(torch::tensor(r->schedule.sigmas), io_.get("loop.sigmas")), 1e-6) << "sigmas";
  EXPECT_LT(max_abs_diff(torch::tensor(r->schedule.timesteps), io_.get("loop.timesteps")), 1e-3) << "timesteps";
  const torch::Tensor model_t = io_.get("loop.model_t");
  for (int i = 0; i < request.schedule.steps; ++i) {
    EXPECT_NEAR(model_time(model->flow_convention().time, r->schedule.timesteps[i]), model_t[i].item<float>(), 1e-6)
        << i;
  }
  absl::StatusOr<torch::Tensor> history = pack_latents(torch::stack(r->history));
  ASSERT_THAT(history, IsOk());
  absl::StatusOr<torch::Tensor> final_packed = pack_latents(r->latents.unsqueeze(0));
  ASSERT_THAT(final_packed, IsOk());
  const double steps_diff = max_abs_diff(*history, io_.get("loop.latents"));
  const double final_diff = max_abs_diff(*final_packed, io_.get("loop.final"));
  const double unpacked_diff = max_abs_diff(r->latents, io_.get("loop.final_unpacked")[0].squeeze(1));
  std::printf("4-step loop: max abs diff per step %.3g, final %.3g, unpacked %.3g\n", steps_diff, final_diff,
              unpacked_diff);
  EXPECT_LT(steps_diff, kTolerance);
  EXPECT_LT(final_diff, kTolerance);
  EXPECT_LT(unpacked_diff, kTolerance);
}

TEST(QwenImageParityLoop, SeededNoiseIsThePipelines) {
  TensorFile io(fixture() + "/io.safetensors");
  const torch::Tensor noise = io.get("loop.noise");
  const uint64_t seed = read_json("variant.json").at("seed").get<uint64_t>() + 2;
  EXPECT_EQ(max_abs_diff(seeded_noise(noise.sizes().vec(), seed), noise), 0.0);
  absl::StatusOr<torch::Tensor> packed = pack_latents(noise[0]);
  ASSERT_THAT(packed, IsOk());
  EXPECT_EQ(max_abs_diff(*packed, io.get("loop.noise_packed")), 0.0);
}

}  // namespace qwen_image_parity_test
}  // namespace diffusiond
