// The Wan transformer's parameter table (every parameter's canonical
// diffusers name, shape and kind), its precision declaration, and the key
// map from the original Wan-AI / ComfyUI single-file naming.
#ifndef DIFFUSIOND_CORE_MODELS_WAN_WAN_PARAMS_H_
#define DIFFUSIOND_CORE_MODELS_WAN_WAN_PARAMS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/models/param_table.h"
#include "core/models/wan/wan_config.h"
#include "core/precision/precision_policy.h"

namespace diffusiond {

// Every parameter of WanTransformer3DModel for `config`, in upstream's
// registration order.
std::vector<ParamSpec> wan_parameter_table(const WanConfig& config);

// Upstream's own declaration: _skip_layerwise_casting_patterns
// (patch_embedding, condition_embedder, norm) and _keep_in_fp32_modules
// (time_embedder, scale_shift_table, norm1-3). With the default skip
// patterns this selects for FP8 exactly the attention and FFN Linears of the
// blocks, as enable_layerwise_casting does.
PrecisionDeclaration wan_precision_declaration();

// Maps a checkpoint name in diffusers or original Wan naming, with or
// without ComfyUI's "model.diffusion_model." prefix, to its diffusers name.
// Only names change (no fused or transposed tensors); the trap is the
// original affine cross-attention norm `norm3`, which is diffusers' `norm2`.
std::optional<std::string> wan_canonical_name(absl::string_view name);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_WAN_WAN_PARAMS_H_
