// The Qwen2.5-VL ModelFamily: recognises transformers Qwen2.5-VL checkpoints
// (a folder with config.json of model_type "qwen2_5_vl" and
// model.safetensors or shards), such as Qwen-Image's text_encoder/, and
// single files holding its tower (ComfyUI's qwen_2.5_vl_7b.safetensors and
// its scaled-fp8 variant), whose config is read from a Qwen2.5-VL
// config.json beside them or inferred from the shapes; and loads their
// language tower as a text encoder. The checkpoint's names are the
// original layout save_pretrained writes, which ComfyUI's files keep
// ("model.embed_tokens.weight", "model.layers.<i>.…", "model.norm.weight";
// "model.language_model.…" as transformers names the modules in memory is
// read too); the vision tower and the LM head are skipped without being
// read or reserved.
#ifndef DIFFUSIOND_CORE_MODELS_QWEN25_VL_QWEN25_VL_FAMILY_H_
#define DIFFUSIOND_CORE_MODELS_QWEN25_VL_QWEN25_VL_FAMILY_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "core/models/model_family.h"

namespace diffusiond {

// The process-wide instance.
const ModelFamily* qwen25_vl_family();

// The tower's canonical name for a checkpoint tensor, or nothing for one
// the text encoder drops (qwen_vl_canonical_name with Qwen2.5-VL's
// prefixes).
std::optional<std::string> qwen25_vl_canonical_name(absl::string_view name);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_QWEN25_VL_QWEN25_VL_FAMILY_H_
