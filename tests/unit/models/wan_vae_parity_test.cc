// Parity of the causal 3-D VAE port with upstream diffusers, on the
// reference fixtures of its two classes: WanVaeParity
// (DIFFUSIOND_WAN_VAE_FIXTURE, default the shared wan-vae-tiny,
// AutoencoderKLWan) and QwenImageVaeParity
// (DIFFUSIOND_QWENIMAGE_VAE_FIXTURE, default qwenimage-vae-tiny,
// AutoencoderKLQwenImage). Both run the same checks, reading every shape
// from the fixture, so they pass unchanged on variants of the same layout
// (tools/variants): decode chunk by chunk from the diffusers folder, the
// original-layout single file with its config and the bare single file;
// the pipeline's uint8 pixels; a batch; encode (moments, mean, logvar,
// sample with the stored eps, the pipelines' normalisation); tiled decode
// and encode with the fixture's tiles; the parameter table and key map.
//
// Tolerance: the fixture's own `tol` (stats.json): ten times the largest
// difference between upstream's float32 and float64 runs (1e-4 for
// wan-vae-tiny, 3e-5 for qwenimage-vae-tiny), as its README asks. A real
// mistake (a cache frame, the interleave, a blend weight) moves outputs by
// 1e-2 or more.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "core/engine/loaded_model.h"
#include "core/models/model_family.h"
#include "core/models/vae/image_postprocess.h"
#include "core/models/wan_vae/wan_vae_model.h"
#include "core/models/wan_vae/wan_vae_network.h"
#include "core/models/wan_vae/wan_vae_params.h"
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

enum class Source { kDiffusersFolder, kSingleFileWithConfig, kSingleFile };
constexpr Source kSources[] = {Source::kDiffusersFolder, Source::kSingleFileWithConfig, Source::kSingleFile};
const char* source_name(Source s) {
  return s == Source::kDiffusersFolder ? "diffusers folder"
         : s == Source::kSingleFileWithConfig ? "single file + config.json" : "bare single file";
}

// [B, C, F, H, W] frames as [B * F, C, H, W] images, for the pixel helpers.
torch::Tensor frames_as_images(const torch::Tensor& x) {
  return x.permute({0, 2, 1, 3, 4}).reshape({x.size(0) * x.size(2), x.size(1), x.size(3), x.size(4)});
}

class CausalVaeParity : public ::testing::Test {
 protected:
  CausalVaeParity(const char* env, const char* name)
      : dir_(testing::fixture_folder(env, name)),
        stats_(read_json_file(dir_ + "/stats.json")),
        tol_(stats_.at("tol").get<double>()),
        io_(dir_ + "/io.safetensors") {
    // The single file alone in a folder: the fixture's own has config.json beside it.
    std::filesystem::create_directories(tmp_.path("bare"));
    std::filesystem::create_symlink(dir_ + "/single_file.safetensors", tmp_.path("bare/single_file.safetensors"));
  }

  bool has(const std::string& key) const { return stats_.at("io").contains(key); }
  torch::Tensor io(const std::string& key) const { return io_.get(key); }

  WanVaeTiling fixture_tiling() const {
    const nlohmann::json& t = stats_.at("tile");
    WanVaeTiling tiling;
    tiling.sample_height = t.at("tile_sample_min_height").get<int64_t>();
    tiling.sample_width = t.at("tile_sample_min_width").get<int64_t>();
    tiling.stride_height = t.at("tile_sample_stride_height").get<int64_t>();
    tiling.stride_width = t.at("tile_sample_stride_width").get<int64_t>();
    return tiling;
  }

  // Loads through the real loader; null (after failing the test) on error.
  // A diffusers folder has config.json beside its weights: the test lays
  // one out with links.
  const WanVaeModel* load(Source source) {
    std::string path = tmp_.path("bare/single_file.safetensors");
    if (source != Source::kSingleFile) {
      const bool folder = source == Source::kDiffusersFolder;
      path = tmp_.path(folder ? "diffusers" : "single_with_config");
      std::filesystem::create_directories(path);
      if (!std::filesystem::exists(path + "/config.json")) {
        std::filesystem::create_symlink(dir_ + "/config.json", path + "/config.json");
        std::filesystem::create_symlink(
            folder ? dir_ + "/vae/diffusion_pytorch_model.safetensors" : dir_ + "/single_file.safetensors",
            path + "/diffusion_pytorch_model.safetensors");
      }
    }
    loaded_ = load_test_model(path, ModelLoadOptions());
    const WanVaeModel* model = loaded_.get<WanVaeModel>();
    EXPECT_NE(model, nullptr) << source_name(source) << " did not load as a causal VAE";
    return model;
  }

  void expect_close(const torch::Tensor& ours, const std::string& key, const char* what) const {
    const torch::Tensor ref = io(key);
    ASSERT_EQ(ours.sizes(), ref.sizes()) << what << " vs " << key;
    const double diff = max_abs_diff(ours, ref);
    std::printf("%s vs %s: max abs diff %.3g (tolerance %.3g)\n", what, key.c_str(), diff, tol_);
    EXPECT_LT(diff, tol_) << what << " vs " << key;
  }

  // Decodes chunk by chunk, checking that each latent frame's frames arrive
  // in order as they are made, and returns them joined.
  torch::Tensor decode_in_chunks(const WanVaeModel& model, const torch::Tensor& latents) {
    std::vector<torch::Tensor> chunks;
    int64_t expected_first = 0;
    const absl::Status s = model.decode_frames(latents, std::nullopt, [&](const torch::Tensor& frames, int64_t first) {
      EXPECT_EQ(first, expected_first);
      EXPECT_EQ(frames.size(2), chunks.empty() ? 1 : model.config().temporal_factor());
      expected_first += frames.size(2);
      chunks.push_back(frames);
      return absl::OkStatus();
    });
    EXPECT_THAT(s, IsOk());
    EXPECT_EQ(static_cast<int64_t>(chunks.size()), latents.size(2));
    return chunks.empty() ? torch::Tensor() : torch::cat(chunks, 2);
  }

  void decode_from_every_source() {
    for (Source source : kSources) {
      if (source == Source::kSingleFile && stats_.at("config").at("z_dim").get<int64_t>() != 16) {
        // Without a config only Wan 2.1's 16-channel statistics can be assumed.
        absl::StatusOr<std::unique_ptr<Checkpoint>> bare = Checkpoint::open(tmp_.path("bare/single_file.safetensors"));
        ASSERT_THAT(bare, IsOk());
        const ModelFamily* family = find_model_family(**bare);
        ASSERT_NE(family, nullptr);
        EXPECT_EQ(family->name(), kWanVaeArchitecture);
        EXPECT_THAT(family->recipe(**bare).status(),
                    testing::StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("give its config.json")));
        continue;
      }
      const WanVaeModel* model = load(source);
      ASSERT_NE(model, nullptr);
      std::printf("%s: %s\n", source_name(source), model->config().describe().c_str());
      const bool bare = source == Source::kSingleFile;
      // A bare file is read as AutoencoderKLWan, with the shapes' sizes.
      EXPECT_EQ(model->config().config_class == WanVaeClass::kWan,
                bare || stats_.at("class").get<std::string>() == "AutoencoderKLWan");
      EXPECT_EQ(model->config().base_dim, stats_.at("config").at("base_dim").get<int64_t>());
      EXPECT_EQ(model->config().z_dim, stats_.at("config").at("z_dim").get<int64_t>());
      if (bare && model->config().latents_std != stats_.at("config").at("latents_std").get<std::vector<double>>()) {
        continue;  // assumed Wan 2.1's statistics, not the fixture's
      }
      expect_close(decode_in_chunks(*model, io("dec.latents")), "dec.image", source_name(source));
    }
  }

  void pipeline_pixels() {
    const WanVaeModel* model = load(Source::kDiffusersFolder);
    ASSERT_NE(model, nullptr);
    absl::StatusOr<torch::Tensor> video = model->decode(io("dec.latents"));
    ASSERT_THAT(video, IsOk());
    absl::StatusOr<torch::Tensor> u8 = image_to_uint8(frames_as_images(*video));
    ASSERT_THAT(u8, IsOk());
    // pipe.u8 is [1, H, W, 3] (one image) or [1, F, H, W, 3] (a video).
    const torch::Tensor ref = io("pipe.u8").reshape(u8->sizes()).to(torch::kInt32);
    const torch::Tensor scaled = io("pipe.image_01").reshape(u8->sizes()) * 255.0;
    const torch::Tensor near_tie = (scaled - scaled.floor() - 0.5).abs() < 1e-4;
    const torch::Tensor ours = u8->to(torch::kInt32), differs = ours != ref;
    std::printf("uint8 pixels: %lld of %lld differ (one level allowed only beside a .5 tie)\n",
                static_cast<long long>(differs.sum().item<int64_t>()), static_cast<long long>(ours.numel()));
    EXPECT_LE((ours - ref).abs().max().item<int64_t>(), 1);
    EXPECT_EQ((differs & ~near_tie).sum().item<int64_t>(), 0);
    // The preprocess of the encode's pixels is exact.
    const torch::Tensor pixels = io("enc.pixels_u8");
    absl::StatusOr<torch::Tensor> x = uint8_to_image(pixels.reshape({-1, pixels.size(2), pixels.size(3), 3}));
    ASSERT_THAT(x, IsOk());
    EXPECT_EQ(max_abs_diff(*x, frames_as_images(io("enc.x"))), 0.0);
  }

  void batch_and_role() {
    const WanVaeModel* model = load(Source::kDiffusersFolder);
    ASSERT_NE(model, nullptr);
    absl::StatusOr<NamedTensors> batch = model->step({{"latents", io("batch.latents")}});
    ASSERT_THAT(batch, IsOk());
    expect_close(batch->at("image"), "batch.image", "batched decode");
    // The ImageDecoder role: [C, F, h, w] latents, one frame comes back as
    // an image [1, 3, H, W].
    const torch::Tensor latents = io("dec.latents");
    EXPECT_THAT(model->check_latents(latents[0]), IsOk());
    EXPECT_FALSE(model->check_latents(latents[0].narrow(0, 0, 1)).ok());
    absl::StatusOr<torch::Tensor> decoded = model->decode_latents(latents[0], /*tiled=*/false);
    ASSERT_THAT(decoded, IsOk());
    if (latents.size(2) == 1) {
      EXPECT_EQ(decoded->dim(), 4);
      EXPECT_LT(max_abs_diff(*decoded, io("dec.image").select(2, 0)), tol_);
      // A Qwen-Image pipeline's [C, h, w] latents are that one frame.
      absl::StatusOr<torch::Tensor> image = model->decode_latents(latents[0].select(1, 0), false);
      ASSERT_THAT(image, IsOk());
      EXPECT_LT(max_abs_diff(*image, io("dec.image").select(2, 0)), tol_);
    } else {
      EXPECT_LT(max_abs_diff(*decoded, io("dec.image")), tol_);
    }
    EXPECT_GT(model->decode_activation_bytes(latents[0], false), 0);
    // A consumer's error stops the decode after the chunk it refused.
    int calls = 0;
    EXPECT_THAT(model->decode_frames(latents, std::nullopt,
                                     [&](const torch::Tensor&, int64_t) {
                                       ++calls;
                                       return absl::CancelledError("the consumer is gone");
                                     }),
                testing::StatusIs(absl::StatusCode::kCancelled, ::testing::HasSubstr("the consumer is gone")));
    EXPECT_EQ(calls, 1);
    EXPECT_THAT(model->decode_frames(latents.narrow(1, 0, 1), std::nullopt,
                                     [](const torch::Tensor&, int64_t) { return absl::OkStatus(); }),
                testing::StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("the latents have shape")));
  }

  void encode() {
    const WanVaeModel* model = load(Source::kSingleFileWithConfig);
    ASSERT_NE(model, nullptr);
    absl::StatusOr<WanVaeEncoding> e = model->encode(io("enc.x"), io("enc.eps"));
    ASSERT_THAT(e, IsOk());
    expect_close(e->moments, "enc.moments", "moments");
    expect_close(e->mean, "enc.mean", "mean");
    expect_close(e->logvar, "enc.logvar", "logvar");
    expect_close(e->sample, "enc.sample", "sample");
    // Pipeline space as the img2img / inpaint / i2v pipelines: (m - mean) * (1 / std).
    expect_close(e->latents_mode, "enc.norm_mul", "latents_mode");
    // The role's encode_image: a one-frame clip as an image loses the axis.
    const torch::Tensor x = io("enc.x");
    if (x.size(2) == 1) {
      absl::StatusOr<torch::Tensor> z = model->encode_image(x.select(2, 0), torch::Tensor(), false);
      ASSERT_THAT(z, IsOk());
      EXPECT_LT(max_abs_diff(*z, io("enc.norm_mul").select(2, 0)), tol_);
    }
    if (has("batch_enc.x")) {
      absl::StatusOr<WanVaeEncoding> b = model->encode(io("batch_enc.x"));
      ASSERT_THAT(b, IsOk());
      expect_close(b->mean, "batch_enc.mean", "batched mean");
      expect_close(b->logvar, "batch_enc.logvar", "batched logvar");
    }
  }

  void tiled() {
    const WanVaeModel* model = load(Source::kDiffusersFolder);
    ASSERT_NE(model, nullptr);
    const WanVaeTiling tiling = fixture_tiling();
    absl::StatusOr<torch::Tensor> image = model->decode(io("tiled_dec.latents"), tiling);
    ASSERT_THAT(image, IsOk());
    expect_close(*image, "tiled_dec.image", "tiled decode");
    absl::StatusOr<WanVaeEncoding> e = model->encode(io("tiled_enc.x"), torch::Tensor(), tiling);
    ASSERT_THAT(e, IsOk());
    expect_close(e->mean, "tiled_enc.mean", "tiled encode mean");
    expect_close(e->logvar, "tiled_enc.logvar", "tiled encode logvar");
  }

  void parameter_table() {
    const WanVaeModel* model = load(Source::kDiffusersFolder);
    ASSERT_NE(model, nullptr);
    int64_t params = 0;
    std::vector<std::string> names;
    for (const ParamSpec& p : wan_vae_parameter_table(model->config())) {
      params += std::accumulate(p.shape.begin(), p.shape.end(), int64_t{1}, std::multiplies<int64_t>());
      names.push_back(p.name);
    }
    std::sort(names.begin(), names.end());
    EXPECT_EQ(params, stats_.at("n_params").get<int64_t>());
    EXPECT_EQ(names, stats_.at("sd_keys").get<std::vector<std::string>>());
    const std::vector<std::string> original = stats_.at("sf_keys").get<std::vector<std::string>>();
    const int64_t res_blocks = wan_vae_res_blocks_in(original);
    EXPECT_EQ(res_blocks, model->config().num_res_blocks);
    for (const auto& [from, to] : stats_.at("sf_to_diffusers").items()) {
      EXPECT_EQ(wan_vae_canonical_name(from, res_blocks), to.get<std::string>()) << from;
    }
    // The architecture follows the config's class.
    EXPECT_EQ(model->architecture(), stats_.at("class").get<std::string>() == "AutoencoderKLWan"
                                         ? kWanVaeArchitecture
                                         : kQwenImageVaeArchitecture);
    // to_json writes the config the parser reads back.
    absl::StatusOr<WanVaeConfig> again = wan_vae_config_from_json(to_json(model->config()), "to_json");
    ASSERT_THAT(again, IsOk());
    EXPECT_EQ(again->describe(), model->config().describe());
    EXPECT_EQ(again->latents_std, model->config().latents_std);
  }

  // At bfloat16 compute the decode runs (the RMS norms widened to float32
  // as upstream's) and returns bf16; its error is bf16's (an 8-bit
  // mantissa, compounded through the frames by the caches), far above the
  // float32 tolerance, so the bounds are loose: a wrong path is off by the
  // image's own scale.
  void bfloat16_decode() {
    ModelLoadOptions options;
    options.compute_dtype = torch::kBFloat16;
    loaded_ = load_test_model(dir_ + "/single_file.safetensors", options);
    const WanVaeModel* model = loaded_.get<WanVaeModel>();
    ASSERT_NE(model, nullptr);
    absl::StatusOr<torch::Tensor> video = model->decode(io("dec.latents"));
    ASSERT_THAT(video, IsOk());
    EXPECT_EQ(video->scalar_type(), torch::kBFloat16);
    const torch::Tensor error = (video->to(torch::kFloat64) - io("dec.image").to(torch::kFloat64)).abs();
    const double max = error.max().item<double>(), mean = error.mean().item<double>();
    std::printf("bf16 decode: max abs diff %.3g, mean %.3g (image within [-1, 1])\n", max, mean);
    EXPECT_LT(mean, 0.02);
    EXPECT_LT(max, 0.5);
  }

  const std::string dir_;
  const nlohmann::json stats_;
  const double tol_;
  TensorFile io_;
  testing::TempDir tmp_;
  testing::LoadedModel loaded_;
};

class WanVaeParity : public CausalVaeParity {
 protected:
  WanVaeParity() : CausalVaeParity("DIFFUSIOND_WAN_VAE_FIXTURE", "wan-vae-tiny") {}
};
class QwenImageVaeParity : public CausalVaeParity {
 protected:
  QwenImageVaeParity() : CausalVaeParity("DIFFUSIOND_QWENIMAGE_VAE_FIXTURE", "qwenimage-vae-tiny") {}
};

TEST_F(WanVaeParity, DecodeChunkByChunkFromEverySource) { decode_from_every_source(); }
TEST_F(WanVaeParity, PipelinePixels) { pipeline_pixels(); }
TEST_F(WanVaeParity, BatchAndTheDecoderRole) { batch_and_role(); }
TEST_F(WanVaeParity, Encode) { encode(); }
TEST_F(WanVaeParity, TiledDecodeAndEncode) { tiled(); }
TEST_F(WanVaeParity, ParameterTableAndKeyMap) { parameter_table(); }
TEST_F(WanVaeParity, Bfloat16Decode) { bfloat16_decode(); }

TEST_F(QwenImageVaeParity, DecodeChunkByChunkFromEverySource) { decode_from_every_source(); }
TEST_F(QwenImageVaeParity, PipelinePixels) { pipeline_pixels(); }
TEST_F(QwenImageVaeParity, BatchAndTheDecoderRole) { batch_and_role(); }
TEST_F(QwenImageVaeParity, Encode) { encode(); }
TEST_F(QwenImageVaeParity, TiledDecodeAndEncode) { tiled(); }
TEST_F(QwenImageVaeParity, ParameterTableAndKeyMap) { parameter_table(); }
TEST_F(QwenImageVaeParity, Bfloat16Decode) { bfloat16_decode(); }

// A conv that meets only zero frames before a one-frame chunk runs as the
// 2-D conv of its kernel's last time slice: the same as the 3-D conv over
// the zero-padded frames, up to summation order.
TEST(CausalConvTest, TheTwoDimensionalPathEqualsTheZeroPaddedConv) {
  torch::manual_seed(7);
  const torch::Tensor x = torch::randn({2, 5, 1, 6, 7});
  for (const auto& shape : {std::vector<int64_t>{4, 5, 3, 3, 3}, std::vector<int64_t>{10, 5, 3, 1, 1}}) {
    const torch::Tensor w = torch::randn(shape) * 0.2, b = torch::randn({shape[0]});
    CausalSlot flat, full;
    const torch::Tensor two_d = causal_conv3d(x, w, b, &flat, /*keep=*/true, /*allow_2d=*/true);
    const torch::Tensor three_d = causal_conv3d(x, w, b, &full, /*keep=*/true, /*allow_2d=*/false);
    ASSERT_EQ(two_d.sizes(), three_d.sizes());
    EXPECT_LT(max_abs_diff(two_d, three_d), 1e-5);
    // Both kept the frame for the next chunk, which then sees it.
    const torch::Tensor next = torch::randn({2, 5, 2, 6, 7});
    EXPECT_LT(max_abs_diff(causal_conv3d(next, w, b, &flat, false), causal_conv3d(next, w, b, &full, false)), 1e-5);
    EXPECT_FALSE(flat.frames.defined());
  }
}

}  // namespace
}  // namespace diffusiond
