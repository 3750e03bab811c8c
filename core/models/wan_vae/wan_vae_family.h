// The causal 3-D VAE's ModelFamilies, one per diffusers class over one
// implementation: AutoencoderKLQwenImage (recognised by its config.json's
// class) and AutoencoderKLWan (its config.json's class, or a single file in
// the original Wan 2.1 layout or diffusers naming, config inferred from the
// shapes). Both build a WanVaeModel whose architecture is the config's.
//
// Not here: the model (wan_vae_model.h).
#ifndef DIFFUSIOND_CORE_MODELS_WAN_VAE_WAN_VAE_FAMILY_H_
#define DIFFUSIOND_CORE_MODELS_WAN_VAE_WAN_VAE_FAMILY_H_

#include "core/models/model_family.h"

namespace diffusiond {

// The process-wide instances.
const ModelFamily* qwen_image_vae_family();
const ModelFamily* wan_vae_family();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_WAN_VAE_WAN_VAE_FAMILY_H_
