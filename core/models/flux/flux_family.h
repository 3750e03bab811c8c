// The FLUX ModelFamily: recognises FluxTransformer2DModel checkpoints as
// diffusers folders (config.json), original Black Forest Labs single files,
// ComfyUI files (with or without the "model.diffusion_model." prefix) and
// ComfyUI scaled-fp8 files. A single file's config comes from a named or
// neighbouring config.json, else from its shapes.
#ifndef DIFFUSIOND_CORE_MODELS_FLUX_FLUX_FAMILY_H_
#define DIFFUSIOND_CORE_MODELS_FLUX_FLUX_FAMILY_H_

#include <memory>

#include "core/models/flux/flux_config.h"
#include "core/models/model_family.h"

namespace diffusiond {

// The process-wide instance.
const ModelFamily* flux_family();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_FLUX_FLUX_FAMILY_H_
