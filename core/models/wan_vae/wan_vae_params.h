// The causal 3-D VAE's parameter table (every parameter's canonical
// diffusers name, shape and kind, for AutoencoderKLWan and
// AutoencoderKLQwenImage alike) and the key map from the original Wan 2.1
// layout (Wan2.1_VAE.pth, ComfyUI's wan_2.1_vae / qwen_image_vae files).
//
// Not here: the config (wan_vae_config.h) or the forward
// (wan_vae_network.h).
#ifndef DIFFUSIOND_CORE_MODELS_WAN_VAE_WAN_VAE_PARAMS_H_
#define DIFFUSIOND_CORE_MODELS_WAN_VAE_WAN_VAE_PARAMS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/models/param_table.h"
#include "core/models/wan_vae/wan_vae_config.h"
#include "core/precision/precision_policy.h"

namespace diffusiond {

// Every parameter of the VAE for `config`: the encoder (its flat
// down_blocks list), quant_conv, post_quant_conv, the decoder. Causal
// convs are Conv3d-shaped [O, I, kt, kh, kw]; the resamplers' and the
// attention's convs Conv2d-shaped; RMS gammas [C, 1, 1, 1] ([C, 1, 1] in
// the attention), as the files store them.
std::vector<ParamSpec> wan_vae_parameter_table(const WanVaeConfig& config);

// The whole VAE stays at compute precision (as AutoencoderKL): its convs
// feed pixels, and it is small beside the denoiser.
PrecisionDeclaration wan_vae_precision_declaration();

// Returns the res blocks per level that checkpoint names `names` (either
// layout) imply, 0 when they name none: diffusers' decoder.up_blocks.0
// resnets - 1, or the index of the original layout's first encoder
// resample.
int64_t wan_vae_res_blocks_in(const std::vector<std::string>& names);

// Maps a checkpoint name in diffusers or the original Wan 2.1 layout to its
// canonical diffusers name; `res_blocks` (wan_vae_res_blocks_in) places
// the original decoder.upsamples.{k}: level k / (res_blocks + 2), resnet
// k % (res_blocks + 2), or the upsampler at res_blocks + 1. Returns nothing
// for names that are neither.
std::optional<std::string> wan_vae_canonical_name(absl::string_view name, int64_t res_blocks);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_WAN_VAE_WAN_VAE_PARAMS_H_
