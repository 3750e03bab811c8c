// The Qwen-Image ModelFamily: recognises QwenImageTransformer2DModel
// checkpoints as diffusers folders (config.json), original single files
// (already in diffusers naming) and ComfyUI files with the
// "model.diffusion_model." prefix. A single file's config comes from a
// named or neighbouring config.json, else from its shapes.
#ifndef DIFFUSIOND_CORE_MODELS_QWEN_IMAGE_QWEN_IMAGE_FAMILY_H_
#define DIFFUSIOND_CORE_MODELS_QWEN_IMAGE_QWEN_IMAGE_FAMILY_H_

#include "core/models/model_family.h"

namespace diffusiond {

// The process-wide instance.
const ModelFamily* qwen_image_family();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_QWEN_IMAGE_QWEN_IMAGE_FAMILY_H_
