// WanVaeModel: the causal 3-D VAE (diffusers' AutoencoderKLWan and
// AutoencoderKLQwenImage, one network) as a loaded Model in the image
// decoder role: decode of pipeline-space latents chunk by chunk, each latent
// frame's decoded frames handed to a consumer as soon as they exist, and the
// encode of images and clips, untiled or tiled as enable_tiling() does it.
//
// Latent spaces: "pipeline space" is what the denoiser works in; "model
// space" what the networks see. Decoding maps pipeline -> model as
// z / (1 / std) + mean with the reciprocal taken in float32, as
// QwenImagePipeline, Krea2Pipeline and WanPipeline do it (z * std + mean
// differs by an ulp); encoding maps back as (z - mean) * (1 / std), as the
// img2img / inpaint / i2v / video2video pipelines do.
//
// Not here: the networks (wan_vae_network.h), tiling (wan_vae_tiling.h),
// the activation estimate (wan_vae_memory.h), pixel conversion
// (core/models/vae/image_postprocess.h).
#ifndef DIFFUSIOND_CORE_MODELS_WAN_VAE_WAN_VAE_MODEL_H_
#define DIFFUSIOND_CORE_MODELS_WAN_VAE_WAN_VAE_MODEL_H_

#include <torch/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/models/common/attention.h"
#include "core/models/image_decoder.h"
#include "core/models/wan_vae/wan_vae_config.h"
#include "core/models/wan_vae/wan_vae_tiling.h"

namespace diffusiond {

// diffusers' AutoencoderKLQwenImage: Qwen-Image's, Krea 2's and Anima's decoder.
inline constexpr absl::string_view kQwenImageVaeArchitecture = "autoencoder-kl-qwen-image";
// diffusers' AutoencoderKLWan: Wan 2.1's causal 3-D video VAE.
inline constexpr absl::string_view kWanVaeArchitecture = "autoencoder-kl-wan";

// The architecture a config's class names.
absl::string_view wan_vae_architecture(WanVaeClass config_class);

// What encode() returns, all [B, z_dim, f, h, w] at the compute dtype except
// moments [B, 2 z_dim, f, h, w].
struct WanVaeEncoding {
  torch::Tensor moments;       // quant_conv's output: cat(mean, logvar)
  torch::Tensor mean;          // moments[:, :z]
  torch::Tensor logvar;        // clamp(moments[:, z:], -30, 20)
  torch::Tensor std;           // exp(0.5 * logvar)
  torch::Tensor latents_mode;  // (mean - latents_mean) * (1 / latents_std): pipeline space
  torch::Tensor sample;        // mean + std * eps; undefined without eps
  torch::Tensor latents;       // the sample in pipeline space; undefined without eps
};

// Takes one latent frame's decoded frames (image_decoder.h).
using WanVaeFrameSink = DecodedFramesSink;

// Thread-safe for concurrent forwards: each call has its own feature cache.
class WanVaeModel final : public ImageDecoder {
 public:
  // Checks that `weights` holds exactly the parameter table of `config`.
  // FAILED_PRECONDITION naming the first missing, misshapen or unexpected
  // tensor; INVALID_ARGUMENT for a bad config.
  static absl::StatusOr<std::unique_ptr<WanVaeModel>> create(const WanVaeConfig& config,
                                                             std::unique_ptr<WeightStore> weights);

  absl::string_view architecture() const override { return wan_vae_architecture(config_.config_class); }
  const WanVaeConfig& config() const { return config_; }

  // Decodes pipeline-space latents [B, z_dim, F, h, w] one latent frame at a
  // time (tile by tile with `tiling` when they are larger than a tile),
  // handing each frame's decoded frames to `sink` in order: frames [B,
  // out_channels, n, 8h, 8w] (n = 1 for latent frame 0, temporal_factor()
  // after), clamped to [-1, 1] except in AutoencoderKLQwenImage's tiled
  // decode, as upstream. INVALID_ARGUMENT for misshapen latents or bad
  // tiling; the sink's error; the token's reason when cancelled; INTERNAL
  // or RESOURCE_EXHAUSTED if libtorch fails.
  absl::Status decode_frames(const torch::Tensor& latents, const std::optional<WanVaeTiling>& tiling,
                             const WanVaeFrameSink& sink) const;
  // decode_frames' chunks joined: [B, out_channels, frames_of(F), 8h, 8w].
  absl::StatusOr<torch::Tensor> decode(const torch::Tensor& latents,
                                       const std::optional<WanVaeTiling>& tiling = std::nullopt) const;

  // Encodes a clip [B, in_channels, T, H, W] in [-1, 1] (T = 1 + 4k; H, W
  // multiples of the spatial factor) over chunks of frames 1, 4, 4, ...
  // `eps` (the N(0, 1) draw of latent_dist.sample(), shaped like mean) is
  // optional: without it sample/latents stay undefined. Errors as decode().
  absl::StatusOr<WanVaeEncoding> encode(const torch::Tensor& video, const torch::Tensor& eps = {},
                                        const std::optional<WanVaeTiling>& tiling = std::nullopt) const;

  // Named inputs:
  //   decode: "latents" [B, z, F, h, w] -> "image" [B, 3, frames, H, W].
  //   encode: "image" [B, 3, T, H, W], optional "eps" -> "moments", "mean",
  //           "logvar", "std", "latents_mode", with eps "sample", "latents".
  //   either: optional "tiled" (one element; nonzero tiles with upstream's
  //           default tiles).
  // Exactly one of "latents" / "image". INVALID_ARGUMENT otherwise.
  absl::StatusOr<NamedTensors> step(const NamedTensors& inputs) const override;
  ActivationEstimate step_activations(const NamedTensors& inputs, bool device_is_cpu) const override;

  // A placement keeps or streams the decoder's up blocks, then the
  // encoder's flat list of down blocks.
  std::vector<std::string> block_containers() const override { return {"decoder.up_blocks", "encoder.down_blocks"}; }

  // The ImageDecoder role. Latents are [C, F, h, w] (or [1, C, F, h, w]);
  // [C, h, w] is one frame, as a Qwen-Image pipeline's. An image [1, 3, H,
  // W] encodes to [1, C, h, w], a clip [1, 3, T, H, W] to [1, C, f, h, w];
  // decode_latents returns [1, 3, H, W] for one frame, else [1, 3, frames,
  // H, W] (a video's consumer takes decode_frames). `tiled` means upstream's
  // default tiles.
  int64_t latent_channels() const override { return config_.z_dim; }
  int64_t spatial_factor() const override { return config_.spatial_factor(); }
  int64_t temporal_factor() const override { return config_.temporal_factor(); }
  absl::Status check_latents(const torch::Tensor& latents) const override;
  // The larger of a decode of `latents` and an encode of the clip they
  // come from (wan_vae_memory.h), so one reservation serves both.
  int64_t decode_activation_bytes(const torch::Tensor& latents, bool tiled) const override;
  absl::StatusOr<torch::Tensor> decode_latents(const torch::Tensor& latents, bool tiled) const override;
  // decode_frames() with upstream's default tiles when `tiled`, each
  // latent frame's frames handed on as they are made.
  absl::Status decode_latent_frames(const torch::Tensor& latents, bool tiled,
                                    const DecodedFramesSink& sink) const override;
  // The streamed decode's peak (wan_vae_memory.h): one chunk's frames at a
  // time, not the joined clip.
  int64_t latent_frames_activation_bytes(const torch::Tensor& latents, bool tiled) const override;
  absl::StatusOr<torch::Tensor> encode_image(const torch::Tensor& image, const torch::Tensor& eps,
                                             bool tiled) const override;

 private:
  WanVaeModel(const WanVaeConfig& config, std::unique_ptr<WeightStore> weights);

  // Latent statistics [1, z, 1, 1, 1] at `dtype` on `device`: the mean, and
  // 1 / std computed in float32.
  torch::Tensor latents_mean(torch::ScalarType dtype, torch::Device device) const;
  torch::Tensor latents_inv_std(torch::ScalarType dtype, torch::Device device) const;

  const WanVaeConfig config_;
  AttentionOptions attention_options_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_WAN_VAE_WAN_VAE_MODEL_H_
