// The Z-Image parameter table (every parameter's canonical diffusers name,
// shape and kind), the key map from original / ComfyUI single-file naming,
// and the fused tensors that split on load.
#ifndef DIFFUSIOND_CORE_MODELS_Z_IMAGE_Z_IMAGE_PARAMS_H_
#define DIFFUSIOND_CORE_MODELS_Z_IMAGE_Z_IMAGE_PARAMS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/models/param_table.h"
#include "core/models/z_image/z_image_config.h"
#include "core/precision/param_kind.h"
#include "core/precision/precision_policy.h"

namespace diffusiond {

// Every parameter of ZImageTransformer2DModel for `config`, in upstream's
// registration order (x_pad_token first).
std::vector<ParamSpec> z_image_parameter_table(const ZImageConfig& config);

// The model's own precision declaration: upstream's
// _skip_layerwise_casting_patterns (t_embedder, cap_embedder); no
// keep-in-fp32 modules.
PrecisionDeclaration z_image_precision_declaration();

// Maps a checkpoint name, in diffusers or original naming and with or
// without a "model.diffusion_model." prefix, to its canonical name. Fused
// original tensors map to "<block>.attention.qkv.weight", split after load.
// Returns nothing for tensors upstream's converter drops (norm_final.weight).
std::optional<std::string> z_image_canonical_name(absl::string_view name);

// The splits to apply to loaded canonical names (a fused qkv per block).
std::vector<FusedSplit> z_image_fused_splits(const ZImageConfig& config,
                                             const std::vector<std::string>& loaded);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_Z_IMAGE_Z_IMAGE_PARAMS_H_
