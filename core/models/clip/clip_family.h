// The CLIP text ModelFamily: recognises transformers CLIP text encoders (a
// folder whose config.json has model_type "clip_text_model", such as
// FLUX.1's text_encoder/) and single files that hold one and nothing else
// (ComfyUI's clip_l.safetensors), and loads the CLIP tokenizer from the
// model's folder or the pipeline's tokenizer/ beside it.
//
// Not here: the forward (clip_model.h) or the names (clip_params.h).
#ifndef DIFFUSIOND_CORE_MODELS_CLIP_CLIP_FAMILY_H_
#define DIFFUSIOND_CORE_MODELS_CLIP_CLIP_FAMILY_H_

#include "core/models/model_family.h"

namespace diffusiond {

// The process-wide instance.
const ModelFamily* clip_family();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_CLIP_CLIP_FAMILY_H_
