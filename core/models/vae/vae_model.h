// VaeModel: diffusers' AutoencoderKL as a loaded Model (role kVae) — the
// pipeline-level decode of denoised latents and encode of images, each
// untiled or tiled as enable_tiling() does it.
//
// Latent spaces: "pipeline space" is what the denoiser works in; "model
// space" is what the networks see. decode() maps pipeline -> model as
// z / scaling_factor + shift_factor (divide first, as upstream's pipelines
// do); encode() maps back as (z - shift_factor) * scaling_factor.
//
// Not here: the networks (vae_network.h), pixel conversion
// (image_postprocess.h), the parameter table (vae_params.h).
#ifndef DIFFUSIOND_CORE_MODELS_VAE_VAE_MODEL_H_
#define DIFFUSIOND_CORE_MODELS_VAE_VAE_MODEL_H_

#include <torch/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/models/common/attention.h"
#include "core/models/image_decoder.h"
#include "core/models/vae/vae_config.h"
#include "core/models/vae/vae_tiling.h"

namespace diffusiond {

inline constexpr absl::string_view kVaeArchitecture = "autoencoder-kl";

// What encode() returns, all [B, latent_channels, H/8, W/8] at the compute
// dtype except moments [B, 2 * latent_channels, H/8, W/8].
struct VaeEncoding {
  torch::Tensor moments;       // encoder output (after quant_conv): cat(mean, logvar)
  torch::Tensor mean;          // moments[:, :L]
  torch::Tensor logvar;        // clamp(moments[:, L:], -30, 20)
  torch::Tensor std;           // exp(0.5 * logvar)
  torch::Tensor latents_mode;  // (mean - shift) * scaling: pipeline space
  torch::Tensor sample;        // mean + std * eps; undefined without eps
  torch::Tensor latents;       // (sample - shift) * scaling; undefined without eps
};

// Thread-safe for concurrent forwards.
class VaeModel final : public ImageDecoder {
 public:
  // Checks that `weights` holds exactly the parameter table of `config` with
  // the right shapes. FAILED_PRECONDITION naming the first missing,
  // misshapen or unexpected tensor; INVALID_ARGUMENT for a bad config.
  static absl::StatusOr<std::unique_ptr<VaeModel>> create(const VaeConfig& config,
                                                          std::unique_ptr<WeightStore> weights);

  absl::string_view architecture() const override { return kVaeArchitecture; }
  const VaeConfig& config() const { return config_; }

  // Decodes pipeline-space latents [B, latent_channels, h, w] to an image
  // [B, out_channels, 8h, 8w] in about [-1, 1] at the compute dtype. With
  // `tiling`, latents larger than its latent tile decode tile by tile.
  // INVALID_ARGUMENT for a misshapen input or bad tiling; RESOURCE_EXHAUSTED
  // or INTERNAL if libtorch fails.
  absl::StatusOr<torch::Tensor> decode(const torch::Tensor& latents,
                                       const std::optional<VaeTiling>& tiling = std::nullopt) const;

  // Encodes an image [B, in_channels, H, W] in [-1, 1] (H, W multiples of
  // 8 for 4 blocks). `eps` (the N(0, 1) draw of latent_dist.sample(), shaped
  // like mean) is optional: without it sample/latents stay undefined. With
  // `tiling`, images larger than its sample tile encode tile by tile.
  // Errors as decode().
  absl::StatusOr<VaeEncoding> encode(const torch::Tensor& image, const torch::Tensor& eps = {},
                                     const std::optional<VaeTiling>& tiling = std::nullopt) const;

  // Named inputs:
  //   decode: "latents" [B, L, h, w] -> "image" [B, 3, 8h, 8w].
  //   encode: "image" [B, 3, H, W], optional "eps" [B, L, H/8, W/8] ->
  //           "moments", "mean", "logvar", "std", "latents_mode", and with
  //           eps also "sample" and "latents".
  //   either: optional "tiled" (a one-element tensor; nonzero tiles with
  //           the config's default tiles).
  // Exactly one of "latents" / "image". INVALID_ARGUMENT otherwise.
  absl::StatusOr<NamedTensors> step(const NamedTensors& inputs) const override;

  // A placement keeps or streams the decoder's up blocks, then the
  // encoder's down blocks; conv_in, the mid blocks and the output layers
  // stay resident. Decoder first: a decode, the pipeline's use, streams
  // its blocks in the order it reads them.
  std::vector<std::string> block_containers() const override { return {"decoder.up_blocks", "encoder.down_blocks"}; }

  // The ImageDecoder role: tiled means default_vae_tiling(config()).
  int64_t latent_channels() const override { return config_.latent_channels; }
  int64_t spatial_factor() const override;
  absl::Status check_latents(const torch::Tensor& latents) const override;
  int64_t decode_activation_bytes(const torch::Tensor& latents, bool tiled) const override;
  absl::StatusOr<torch::Tensor> decode_latents(const torch::Tensor& latents, bool tiled) const override;
  absl::StatusOr<torch::Tensor> encode_image(const torch::Tensor& image, const torch::Tensor& eps,
                                             bool tiled) const override;

 private:
  VaeModel(const VaeConfig& config, std::unique_ptr<WeightStore> weights);

  absl::Status check_input(const torch::Tensor& t, int64_t channels, const char* what) const;
  torch::Tensor run_decoder(const torch::Tensor& z) const;
  torch::Tensor run_encoder(const torch::Tensor& x) const;

  const VaeConfig config_;
  AttentionOptions attention_options_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_VAE_VAE_MODEL_H_
