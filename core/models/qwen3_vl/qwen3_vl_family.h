// The Qwen3-VL ModelFamily: recognises transformers Qwen3-VL checkpoints (a
// folder with config.json of model_type "qwen3_vl" and model.safetensors
// or shards), such as Krea 2's text_encoder/, and loads their language
// tower as a text encoder. Names are Qwen3VLModel's
// ("language_model.embed_tokens.weight", "language_model.layers.<i>.…") or
// Qwen3VLForConditionalGeneration's ("model.language_model.…", as the hub's
// Qwen3-VL-4B-Instruct has them); the vision tower (with its deepstack
// mergers) and the LM head are skipped without being read or reserved.
#ifndef DIFFUSIOND_CORE_MODELS_QWEN3_VL_QWEN3_VL_FAMILY_H_
#define DIFFUSIOND_CORE_MODELS_QWEN3_VL_QWEN3_VL_FAMILY_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "core/models/model_family.h"

namespace diffusiond {

// The process-wide instance.
const ModelFamily* qwen3_vl_family();

// The tower's canonical name for a checkpoint tensor, or nothing for one
// the text encoder drops (qwen_vl_canonical_name with Qwen3-VL's
// prefixes).
std::optional<std::string> qwen3_vl_canonical_name(absl::string_view name);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_QWEN3_VL_QWEN3_VL_FAMILY_H_
