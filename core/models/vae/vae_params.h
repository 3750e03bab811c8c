// The AutoencoderKL parameter table (every parameter's canonical diffusers
// name, shape and kind), the key map from the original ldm single-file
// naming (BFL's ae.safetensors, optionally under "first_stage_model." or
// "vae."), and the attention weights that load as 1x1 convs.
//
// Not here: the config (vae_config.h) or the forward (vae_model.h).
#ifndef DIFFUSIOND_CORE_MODELS_VAE_VAE_PARAMS_H_
#define DIFFUSIOND_CORE_MODELS_VAE_VAE_PARAMS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/models/vae/vae_config.h"
#include "core/models/param_table.h"
#include "core/precision/param_kind.h"
#include "core/precision/precision_policy.h"

namespace diffusiond {

// Every parameter of AutoencoderKL for `config`: encoder, decoder, then the
// quant convs the config enables.
std::vector<ParamSpec> vae_parameter_table(const VaeConfig& config);

// The whole VAE stays at compute precision: its convs feed pixels directly,
// and the model is small next to the denoiser, so FP8 storage is refused for
// every parameter (one skip pattern that matches every module).
PrecisionDeclaration vae_precision_declaration();

// Returns the number of down blocks named in `names` (checkpoint names in
// either naming, with or without prefix): the highest encoder level + 1.
int64_t vae_num_blocks_in(const std::vector<std::string>& names);

// Maps a checkpoint name, in diffusers or ldm naming and with or without a
// "first_stage_model." / "vae." prefix, to its canonical name. ldm numbers
// the decoder's levels from the output end, so "decoder.up.{k}" maps to
// up_blocks.{num_blocks - 1 - k}. Also accepts the attention names of
// diffusers before 0.14 (query, key, value, proj_attn). Returns nothing for
// tensors that are not the VAE's (the rest of a full ldm checkpoint) and for
// levels outside [0, num_blocks).
std::optional<std::string> vae_canonical_name(absl::string_view name, int64_t num_blocks);

// Canonical names of the attention projections, which ldm files store as
// [C, C, 1, 1] convs and the model uses as [C, C] Linear weights.
std::vector<std::string> vae_attention_weight_names(const VaeConfig& config);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_VAE_VAE_PARAMS_H_
