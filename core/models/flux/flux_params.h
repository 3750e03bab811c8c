// The FLUX parameter table (every parameter's canonical diffusers name,
// shape and kind), the model's precision declaration, and the key map from
// the original Black Forest Labs / ComfyUI single-file naming: which names
// are fused tensors that split on load and which hold halves in the other
// order.
//
// Not here: applying the splits and swaps to loaded weights
// (flux_weight_layout.h).
#ifndef DIFFUSIOND_CORE_MODELS_FLUX_FLUX_PARAMS_H_
#define DIFFUSIOND_CORE_MODELS_FLUX_FLUX_PARAMS_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/models/flux/flux_config.h"
#include "core/models/param_table.h"
#include "core/precision/precision_policy.h"

namespace diffusiond {

// Every parameter of FluxTransformer2DModel for `config`.
std::vector<ParamSpec> flux_parameter_table(const FluxConfig& config);

// Upstream's _skip_layerwise_casting_patterns (pos_embed, norm): with the
// default patterns every adaLN modulation Linear and the top-level proj_out
// stay dense; the embedders and every block's other Linears may be FP8.
PrecisionDeclaration flux_precision_declaration();

// Maps a checkpoint name, in diffusers or original naming and with or
// without a "model.diffusion_model." prefix, to its canonical name. Fused
// original tensors keep a fused name ("<block>.attn.qkv.*",
// "<block>.attn.add_qkv_proj.*", "<single block>.linear1.*") that
// flux_fused_splits() splits; the final modulation maps to
// "norm_out.linear_shift_scale.*" (original [shift; scale] order).
std::optional<std::string> flux_canonical_name(absl::string_view name);

// The row splits to apply to `loaded` canonical names, for weights and
// biases alike.
std::vector<FusedSplit> flux_fused_splits(const FluxConfig& config,
                                          const std::vector<std::string>& loaded);

// Loaded names whose two row halves are stored in the original [shift;
// scale] order, with the diffusers name they take once swapped.
std::vector<std::pair<std::string, std::string>> flux_swapped_halves(
    const std::vector<std::string>& loaded);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_FLUX_FLUX_PARAMS_H_
