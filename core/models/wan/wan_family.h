// The Wan ModelFamily: recognises WanTransformer3DModel checkpoints (Wan 2.1
// and each expert of Wan 2.2) as diffusers folders and as original Wan-AI /
// ComfyUI single files.
#ifndef DIFFUSIOND_CORE_MODELS_WAN_WAN_FAMILY_H_
#define DIFFUSIOND_CORE_MODELS_WAN_WAN_FAMILY_H_

#include "core/models/model_family.h"

namespace diffusiond {

// The process-wide instance.
const ModelFamily* wan_family();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_WAN_WAN_FAMILY_H_
