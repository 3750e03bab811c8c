// The Krea 2 ModelFamily: recognises Krea2Transformer2DModel checkpoints as
// diffusers folders (config.json). Upstream has no converter for original
// single files, so none is recognised by its tensor names.
#ifndef DIFFUSIOND_CORE_MODELS_KREA2_KREA2_FAMILY_H_
#define DIFFUSIOND_CORE_MODELS_KREA2_KREA2_FAMILY_H_

#include "core/models/model_family.h"

namespace diffusiond {

// The process-wide instance.
const ModelFamily* krea2_family();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_KREA2_KREA2_FAMILY_H_
