// The T5 ModelFamily: recognises T5 v1.1 and UMT5 encoders — a
// transformers folder whose config.json has model_type "t5" or "umt5"
// (FLUX.1's text_encoder_2, Wan's text_encoder), or a single file without
// a config holding T5 encoder tensors (ComfyUI's t5xxl_fp16 /
// t5xxl_fp8_e4m3fn(_scaled), umt5_xxl_*), whose config is then inferred
// from the shapes. Its tokenizer is read from the model's folder or the
// pipeline's sibling tokenizer folder (spiece.model).
#ifndef DIFFUSIOND_CORE_MODELS_T5_T5_FAMILY_H_
#define DIFFUSIOND_CORE_MODELS_T5_T5_FAMILY_H_

#include "core/models/model_family.h"

namespace diffusiond {

// The process-wide instance.
const ModelFamily* t5_family();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_T5_T5_FAMILY_H_
