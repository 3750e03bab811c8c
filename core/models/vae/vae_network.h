// The AutoencoderKL networks as functions over weights: the encoder (image
// -> moments, quant_conv included) and the decoder (model-space latents ->
// image, post_quant_conv included), ported from diffusers' Encoder, Decoder,
// ResnetBlock2D, UNetMidBlock2D, Downsample2D, Upsample2D and the VAE's
// single-head Attention.
//
// Not here: latent scaling, tiling or pixel conversion (vae_model.h,
// vae_tiling.h, image_postprocess.h). Activations are dropped as soon as
// they are dead, which vae_memory.h's formula relies on.
#ifndef DIFFUSIOND_CORE_MODELS_VAE_VAE_NETWORK_H_
#define DIFFUSIOND_CORE_MODELS_VAE_VAE_NETWORK_H_

#include <torch/types.h>

#include <functional>
#include <string>

#include "core/models/common/attention.h"
#include "core/models/vae/vae_config.h"

namespace diffusiond {

// Returns the parameter with the canonical `name` at the compute dtype.
using VaeParamFn = std::function<torch::Tensor(const std::string& name)>;

// image [B, in_channels, H, W] at the compute dtype -> moments [B,
// 2 * latent_channels, H / 8, W / 8] (for 4 blocks). Throws what libtorch
// throws; callers wrap it in status_of.
torch::Tensor vae_encoder_forward(const VaeConfig& config, const VaeParamFn& param,
                                  torch::Tensor image, const AttentionOptions& attention);

// z [B, latent_channels, h, w] (model space: already divided by the scaling
// factor and shifted) -> image [B, out_channels, 8h, 8w] in about [-1, 1].
// Throws what libtorch throws.
torch::Tensor vae_decoder_forward(const VaeConfig& config, const VaeParamFn& param,
                                  torch::Tensor z, const AttentionOptions& attention);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_VAE_VAE_NETWORK_H_
