// The Qwen3 ModelFamily: recognises transformers Qwen3 checkpoints (a folder
// with config.json of model_type "qwen3" and model.safetensors or shards),
// such as Z-Image's text encoder (Qwen3-4B).
#ifndef DIFFUSIOND_CORE_MODELS_QWEN3_QWEN3_FAMILY_H_
#define DIFFUSIOND_CORE_MODELS_QWEN3_QWEN3_FAMILY_H_

#include "core/models/model_family.h"

namespace diffusiond {

// The process-wide instance.
const ModelFamily* qwen3_family();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_QWEN3_QWEN3_FAMILY_H_
