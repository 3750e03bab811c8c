// The AutoencoderKL ModelFamily: recognises VAE checkpoints as diffusers
// folders (config.json of class AutoencoderKL) and single files in diffusers
// or ldm naming (BFL's ae.safetensors, "first_stage_model." / "vae."
// prefixed), and builds a VaeModel, reshaping ldm's 1x1-conv attention
// weights to Linear on the way.
#ifndef DIFFUSIOND_CORE_MODELS_VAE_VAE_FAMILY_H_
#define DIFFUSIOND_CORE_MODELS_VAE_VAE_FAMILY_H_

#include "core/models/model_family.h"

namespace diffusiond {

// The process-wide instance.
const ModelFamily* vae_family();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_VAE_VAE_FAMILY_H_
