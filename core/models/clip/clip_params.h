// The CLIP text encoder's parameter table (every parameter's canonical name,
// shape and kind), the key map from the checkpoint layouts it is found in,
// and the model's precision declaration.
//
// Canonical names are transformers' CLIPTextModel keys:
// "text_model.embeddings.token_embedding.weight",
// "text_model.encoder.layers.<i>.self_attn.q_proj.weight", …,
// "text_model.final_layer_norm.bias", and for CLIPTextModelWithProjection
// "text_projection.weight".
//
// Layouts mapped: transformers' (also the ComfyUI / community single file
// clip_l.safetensors, which adds text_projection.weight and sometimes
// logit_scale), and the text encoder inside a Stable Diffusion or SD3/FLUX
// bundle ("cond_stage_model.transformer.", "conditioner.embedders.0.
// transformer.", "text_encoders.clip_l.transformer." prefixes).
#ifndef DIFFUSIOND_CORE_MODELS_CLIP_CLIP_PARAMS_H_
#define DIFFUSIOND_CORE_MODELS_CLIP_CLIP_PARAMS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/models/clip/clip_config.h"
#include "core/models/param_table.h"
#include "core/precision/precision_policy.h"

namespace diffusiond {

// Every parameter of CLIPTextModel (or CLIPTextModelWithProjection) for
// `config`, in upstream's registration order.
std::vector<ParamSpec> clip_parameter_table(const ClipTextConfig& config);

// The embeddings, every LayerNorm and the text projection stay at compute
// precision; only the attention and MLP projections may take FP8 storage.
PrecisionDeclaration clip_precision_declaration();

// Maps a checkpoint name to its canonical name: a bundle's prefix is
// removed. Returns nothing for what the model does not use: position_ids
// (a buffer older transformers saved; positions are always 0..L-1),
// logit_scale, and text_projection.weight unless `keep_projection`.
std::optional<std::string> clip_canonical_name(absl::string_view name, bool keep_projection);

// True when every name maps to a CLIP text tensor (or is one the model
// drops) and the token embedding and final norm are among them: a file that
// holds a CLIP text encoder and nothing else.
bool is_clip_text_checkpoint(const std::vector<std::string>& names);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_CLIP_CLIP_PARAMS_H_
