// Parity of the AutoencoderKL port with upstream diffusers, on the reference
// fixture (DIFFUSIOND_VAE_FIXTURE, default the shared vae-tiny): decode from
// the diffusers folder, from the ldm single file with config.json, and from
// the bare single file (config inferred); encode (moments, mean, logvar,
// std, sample with the stored eps, pipeline latents); pixel conversion both
// ways; tiled decode and encode with the fixture's tile sizes.
//
// Tolerance: 1e-5 absolute. The fixture's float32 noise floor (a float64
// run against the float32 one) is ~3e-6 on images of magnitude ~4; a few
// times that allows a different summation order in libtorch's kernels, while
// a real mistake (a padding side, a group count, a blend weight) moves
// outputs by 1e-3 or more.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/engine/loaded_model.h"
#include "core/models/vae/image_postprocess.h"
#include "core/models/vae/vae_model.h"
#include "core/models/vae/vae_params.h"
#include "core/util/file_text.h"
#include "core/util/json.h"
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
using ::diffusiond::testing::max_abs_diff;
using ::diffusiond::testing::read_json_file;
using ::diffusiond::testing::TensorFile;

constexpr double kVaeTolerance = 1e-5;

std::string vae_fixture() { return ::diffusiond::testing::fixture_folder("DIFFUSIOND_VAE_FIXTURE", "vae-tiny"); }

nlohmann::json vae_json(const std::string& file) { return read_json_file(vae_fixture() + "/" + file); }

// The tile sizes the fixture's tiled.* cases set on the upstream instance.
VaeTiling fixture_tiling() {
  const nlohmann::json stats = vae_json("stats.json");
  VaeTiling t;
  t.sample_tile = stats.at("tile").at("sample").get<int64_t>();
  t.latent_tile = stats.at("tile").at("latent").get<int64_t>();
  return t;
}

enum class VaeSource { kDiffusersFolder, kSingleFileWithConfig, kSingleFile };

void PrintTo(VaeSource s, std::ostream* os) {
  *os << (s == VaeSource::kDiffusersFolder ? "diffusers folder"
          : s == VaeSource::kSingleFileWithConfig ? "ldm single file + config.json" : "bare ldm single file");
}

class VaeParity : public ::testing::TestWithParam<VaeSource> {
 protected:
  // The fixture keeps config.json beside vae/; a diffusers model folder has
  // them together, so the test lays one out with links.
  std::string path_for(VaeSource source) {
    const std::string dir = vae_fixture();
    switch (source) {
      case VaeSource::kDiffusersFolder:
      case VaeSource::kSingleFileWithConfig:
        std::filesystem::create_symlink(dir + "/config.json", tmp_.path("config.json"));
        std::filesystem::create_symlink(
            source == VaeSource::kDiffusersFolder ? dir + "/vae/diffusion_pytorch_model.safetensors"
                                               : dir + "/single_file.safetensors",
            tmp_.path("diffusion_pytorch_model.safetensors"));
        return tmp_.path();
      case VaeSource::kSingleFile: return dir + "/single_file.safetensors";
    }
    return "";
  }

  // Loads through the real loader; null (after failing the test) on error.
  const VaeModel* load(VaeSource source) {
    loaded_ = load_test_model(path_for(source), ModelLoadOptions());
    if (!loaded_.pin) return nullptr;
    const auto* model = dynamic_cast<const VaeModel*>(&loaded_.pin.as<diffusiond::LoadedModel>()->model());
    EXPECT_NE(model, nullptr) << "the checkpoint did not load as a VAE";
    return model;
  }

  // The bare file cannot tell norm_num_groups; the test runs it only when
  // the inferred config matches config.json.
  bool skip_if_inferred_differs(const VaeModel& model) {
    if (GetParam() != VaeSource::kSingleFile) return false;
    const nlohmann::json config = vae_json("config.json");
    const VaeConfig& c = model.config();
    EXPECT_EQ(c.block_out_channels, config.at("block_out_channels").get<std::vector<int64_t>>());
    EXPECT_EQ(c.layers_per_block, config.at("layers_per_block").get<int64_t>());
    EXPECT_EQ(c.latent_channels, config.at("latent_channels").get<int64_t>());
    EXPECT_EQ(c.use_quant_conv, config.at("use_quant_conv").get<bool>());
    EXPECT_EQ(c.use_post_quant_conv, config.at("use_post_quant_conv").get<bool>());
    return c.norm_num_groups != config.at("norm_num_groups").get<int64_t>() ||
           c.scaling_factor != config.at("scaling_factor").get<double>() ||
           c.shift_factor != (config.value("shift_factor", nlohmann::json()).is_null()
                                  ? 0.0
                                  : config.at("shift_factor").get<double>());
  }

  testing::TempDir tmp_;
  testing::LoadedModel loaded_;
  TensorFile io_{vae_fixture() + "/io.safetensors"};
};

TEST_P(VaeParity, Decode) {
  const VaeModel* model = load(GetParam());
  ASSERT_NE(model, nullptr);
  if (skip_if_inferred_differs(*model)) GTEST_SKIP() << "inferred " << model->config().describe();
  EXPECT_EQ(model->role(), ModelRole::kVae);
  absl::StatusOr<torch::Tensor> image = model->decode(io_.get("decode.latents"));
  ASSERT_THAT(image, IsOk());
  const double diff = max_abs_diff(*image, io_.get("decode.image"));
  std::printf("decode vs decode.image: max abs diff %.3g\n", diff);
  EXPECT_LT(diff, kVaeTolerance);
}

TEST_P(VaeParity, Encode) {
  const VaeModel* model = load(GetParam());
  ASSERT_NE(model, nullptr);
  if (skip_if_inferred_differs(*model)) GTEST_SKIP() << "inferred " << model->config().describe();
  absl::StatusOr<VaeEncoding> e = model->encode(io_.get("encode.image"), io_.get("encode.eps"));
  ASSERT_THAT(e, IsOk());
  const std::pair<const char*, torch::Tensor> outputs[] = {
      {"moments", e->moments}, {"mean", e->mean},       {"logvar", e->logvar},
      {"std", e->std},         {"sample", e->sample},   {"latents", e->latents},
      {"latents_mode", e->latents_mode},
  };
  for (const auto& [name, ours] : outputs) {
    const double diff = max_abs_diff(ours, io_.get(std::string("encode.") + name));
    std::printf("encode.%s: max abs diff %.3g\n", name, diff);
    EXPECT_LT(diff, kVaeTolerance) << name;
  }
}

TEST_P(VaeParity, TiledDecodeAndEncode) {
  const VaeModel* model = load(GetParam());
  ASSERT_NE(model, nullptr);
  if (skip_if_inferred_differs(*model)) GTEST_SKIP() << "inferred " << model->config().describe();
  const VaeTiling tiling = fixture_tiling();
  absl::StatusOr<torch::Tensor> image = model->decode(io_.get("decode.latents"), tiling);
  ASSERT_THAT(image, IsOk());
  const double decode_diff = max_abs_diff(*image, io_.get("tiled.decode.image"));
  std::printf("tiled decode: max abs diff %.3g (vs untiled reference %.3g)\n", decode_diff,
              max_abs_diff(*image, io_.get("decode.image")));
  EXPECT_LT(decode_diff, kVaeTolerance);
  absl::StatusOr<VaeEncoding> e = model->encode(io_.get("encode.image"), torch::Tensor(), tiling);
  ASSERT_THAT(e, IsOk());
  for (const auto& [name, ours] : {std::pair<const char*, torch::Tensor>{"moments", e->moments},
                                   {"mean", e->mean}, {"logvar", e->logvar}}) {
    const double diff = max_abs_diff(ours, io_.get(std::string("tiled.encode.") + name));
    std::printf("tiled encode.%s: max abs diff %.3g\n", name, diff);
    EXPECT_LT(diff, kVaeTolerance) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Sources, VaeParity,
                         ::testing::Values(VaeSource::kDiffusersFolder, VaeSource::kSingleFileWithConfig,
                                           VaeSource::kSingleFile),
                         [](const auto& info) {
                           return info.param == VaeSource::kDiffusersFolder        ? "DiffusersFolder"
                                  : info.param == VaeSource::kSingleFileWithConfig ? "SingleFileWithConfig"
                                                                                : "SingleFile";
                         });

TEST(VaeParityPixels, PreprocessMatchesUpstreamExactly) {
  TensorFile io(vae_fixture() + "/io.safetensors");
  absl::StatusOr<torch::Tensor> image = uint8_to_image(io.get("encode.image_u8"));
  ASSERT_THAT(image, IsOk());
  EXPECT_EQ(max_abs_diff(*image, io.get("encode.image")), 0.0);
}

TEST(VaeParityPixels, PostprocessOfTheReferenceImageIsExact) {
  TensorFile io(vae_fixture() + "/io.safetensors");
  absl::StatusOr<torch::Tensor> unit = image_to_unit_nhwc(io.get("decode.image"));
  ASSERT_THAT(unit, IsOk());
  EXPECT_EQ(max_abs_diff(*unit, io.get("decode.image_01")), 0.0);
  absl::StatusOr<torch::Tensor> u8 = image_to_uint8(io.get("decode.image"));
  ASSERT_THAT(u8, IsOk());
  EXPECT_EQ(u8->scalar_type(), torch::kUInt8);
  EXPECT_TRUE(torch::equal(*u8, io.get("decode.image_u8")));
}

// Our decoded image to pixels: exact, except that a value whose x * 255 sits
// within 1e-4 of a .5 boundary may round the other way (off by one).
TEST(VaeParityPixels, DecodedPixelsMatchUpToTies) {
  testing::TempDir tmp;
  std::filesystem::create_symlink(vae_fixture() + "/config.json", tmp.path("config.json"));
  std::filesystem::create_symlink(vae_fixture() + "/vae/diffusion_pytorch_model.safetensors",
                                  tmp.path("diffusion_pytorch_model.safetensors"));
  testing::LoadedModel l = load_test_model(tmp.path(), ModelLoadOptions());
  ASSERT_TRUE(l.pin);
  const auto* model = dynamic_cast<const VaeModel*>(&l.pin.as<diffusiond::LoadedModel>()->model());
  ASSERT_NE(model, nullptr);
  TensorFile io(vae_fixture() + "/io.safetensors");
  NamedTensors in = {{"latents", io.get("decode.latents")}};
  absl::StatusOr<NamedTensors> out = model->step(in);
  ASSERT_THAT(out, IsOk());
  absl::StatusOr<torch::Tensor> u8 = image_to_uint8(out->at("image"));
  ASSERT_THAT(u8, IsOk());
  const torch::Tensor ours = u8->to(torch::kInt32), ref = io.get("decode.image_u8").to(torch::kInt32);
  const torch::Tensor scaled = io.get("decode.image_01") * 255.0;
  const torch::Tensor near_tie = (scaled - scaled.floor() - 0.5).abs() < 1e-4;
  const torch::Tensor differs = ours != ref;
  const int64_t n_differ = differs.sum().item<int64_t>();
  const int64_t n_near_tie = near_tie.sum().item<int64_t>();
  std::printf("uint8 pixels: %lld of %lld differ (max 1 allowed where near a .5 tie; %lld near ties)\n",
              static_cast<long long>(n_differ), static_cast<long long>(ours.numel()),
              static_cast<long long>(n_near_tie));
  EXPECT_LE((ours - ref).abs().max().item<int64_t>(), 1);
  EXPECT_EQ((differs & ~near_tie).sum().item<int64_t>(), 0);
}

TEST(VaeParityStep, EncodeByNameAndRefuseBadInputs) {
  testing::LoadedModel l = load_test_model(vae_fixture() + "/single_file.safetensors", ModelLoadOptions());
  ASSERT_TRUE(l.pin);
  const auto* model = dynamic_cast<const VaeModel*>(&l.pin.as<diffusiond::LoadedModel>()->model());
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->architecture(), "autoencoder-kl");
  TensorFile io(vae_fixture() + "/io.safetensors");
  const torch::Tensor image = io.get("encode.image"), eps = io.get("encode.eps");
  // "tiled" with the config's default tiles: larger than this image, so
  // the result is the untiled one, as upstream's.
  absl::StatusOr<NamedTensors> out =
      model->step({{"image", image}, {"eps", eps}, {"tiled", torch::ones({1})}});
  ASSERT_THAT(out, IsOk());
  for (const char* name : {"moments", "mean", "logvar", "std", "sample", "latents", "latents_mode"}) {
    ASSERT_EQ(out->count(name), 1u) << name;
    EXPECT_LT(max_abs_diff(out->at(name), io.get(std::string("encode.") + name)), kVaeTolerance) << name;
  }
  using ::diffusiond::testing::StatusIs;
  using ::testing::HasSubstr;
  const torch::Tensor latents = io.get("decode.latents");
  EXPECT_THAT(model->step({{"image", image}, {"latents", latents}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("exactly one of")));
  EXPECT_THAT(model->step({{"latents", latents}, {"eps", eps}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unexpected input \"eps\"")));
  EXPECT_THAT(model->step({{"latents", latents.narrow(1, 0, 3)}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the latents has shape")));
  EXPECT_THAT(model->step({{"image", image}, {"eps", eps.narrow(2, 0, 1)}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("eps has shape")));
  EXPECT_THAT(model->step({{"latents", latents}, {"tiled", torch::ones({2})}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("exactly one element")));
  VaeTiling bad;
  bad.sample_tile = 8;
  bad.latent_tile = 1;
  EXPECT_THAT(model->decode(latents, bad), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no stride")));
}

// At bfloat16 compute the decode runs (every op has a bf16 CPU kernel) and
// returns bf16; its error is bf16's (8-bit mantissa: ~1% of the image's
// magnitude), far above the float32 tolerance, so the bound here is loose.
TEST(VaeParityBf16, DecodeRunsAtTheComputeDtype) {
  ModelLoadOptions options;
  options.compute_dtype = torch::kBFloat16;
  testing::LoadedModel l = load_test_model(vae_fixture() + "/single_file.safetensors", options);
  ASSERT_TRUE(l.pin);
  const auto* model = dynamic_cast<const VaeModel*>(&l.pin.as<diffusiond::LoadedModel>()->model());
  ASSERT_NE(model, nullptr);
  TensorFile io(vae_fixture() + "/io.safetensors");
  absl::StatusOr<torch::Tensor> image = model->decode(io.get("decode.latents"));
  ASSERT_THAT(image, IsOk());
  EXPECT_EQ(image->scalar_type(), torch::kBFloat16);
  const torch::Tensor reference = io.get("decode.image");
  const double diff = max_abs_diff(*image, reference);
  const double scale = reference.abs().max().item<double>();
  std::printf("bf16 decode: max abs diff %.3g (image max %.3g)\n", diff, scale);
  EXPECT_LT(diff, 0.1 * scale);
}

TEST(VaeParityParams, TableMatchesTheFixtureFiles) {
  const nlohmann::json stats = vae_json("stats.json");
  absl::StatusOr<std::string> text = read_text_file(vae_fixture() + "/config.json");
  ASSERT_THAT(text, IsOk());
  absl::StatusOr<VaeConfig> config = parse_vae_config(*text, "config.json");
  ASSERT_THAT(config, IsOk());
  int64_t params = 0;
  std::vector<std::string> names;
  for (const ParamSpec& p : vae_parameter_table(*config)) {
    int64_t n = 1;
    for (int64_t d : p.shape) n *= d;
    params += n;
    names.push_back(p.name);
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(params, stats.at("n_params").get<int64_t>());
  EXPECT_EQ(names, stats.at("sd_keys").get<std::vector<std::string>>());
  // Every ldm key maps onto a diffusers key, and onto all of them.
  std::vector<std::string> mapped;
  for (const std::string& key : stats.at("sf_keys").get<std::vector<std::string>>()) {
    std::optional<std::string> name = vae_canonical_name(key, config->num_blocks());
    ASSERT_TRUE(name.has_value()) << key;
    mapped.push_back(*name);
  }
  std::sort(mapped.begin(), mapped.end());
  EXPECT_EQ(mapped, names);
}

}  // namespace
}  // namespace diffusiond
