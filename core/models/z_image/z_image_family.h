// The Z-Image ModelFamily: recognises ZImageTransformer2DModel checkpoints
// in diffusers, original and ComfyUI (scaled fp8) form.
#ifndef DIFFUSIOND_CORE_MODELS_Z_IMAGE_Z_IMAGE_FAMILY_H_
#define DIFFUSIOND_CORE_MODELS_Z_IMAGE_Z_IMAGE_FAMILY_H_

#include "core/models/model_family.h"

namespace diffusiond {

// The process-wide instance.
const ModelFamily* z_image_family();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_Z_IMAGE_Z_IMAGE_FAMILY_H_
