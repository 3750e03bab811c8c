// Qwen-Image's parameter table (diffusers name, shape and kind), its
// precision declaration and its key names. Original Qwen-Image checkpoints
// already use the diffusers names and layouts (upstream's single-file
// mapping is the identity), so the only renaming is ComfyUI's
// "model.diffusion_model." prefix.
#ifndef DIFFUSIOND_CORE_MODELS_QWEN_IMAGE_QWEN_IMAGE_PARAMS_H_
#define DIFFUSIOND_CORE_MODELS_QWEN_IMAGE_QWEN_IMAGE_PARAMS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/models/param_table.h"
#include "core/models/qwen_image/qwen_image_config.h"
#include "core/precision/precision_policy.h"

namespace diffusiond {

// The timestep sinusoid's width (Timesteps(256, ...) in upstream's
// QwenTimestepProjEmbeddings): the forward's and the parameter table's.
inline constexpr int64_t kQwenTimeChannels = 256;

// Every parameter of QwenImageTransformer2DModel for `config`.
std::vector<ParamSpec> qwen_image_parameter_table(const QwenImageConfig& config);

// Upstream's _skip_layerwise_casting_patterns (pos_embed, norm). With the
// default patterns, norm_out.linear ('norm') and the top-level proj_out
// stay dense; unlike FLUX's norm1.linear, the blocks' modulation Linears
// (img_mod.1, txt_mod.1) match no pattern and may be FP8.
PrecisionDeclaration qwen_image_precision_declaration();

// Maps a checkpoint name, with or without a "model.diffusion_model."
// prefix, to its canonical (diffusers) name.
std::optional<std::string> qwen_image_canonical_name(absl::string_view name);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_QWEN_IMAGE_QWEN_IMAGE_PARAMS_H_
