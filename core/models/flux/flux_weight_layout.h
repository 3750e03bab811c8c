// Bringing loaded FLUX weights from the original (Black Forest Labs /
// ComfyUI) layout to diffusers': fused q/k/v(/mlp) tensors split into
// zero-copy row views, and the final modulation's [shift; scale] halves
// swapped to [scale; shift] in place. A diffusers checkpoint passes through
// unchanged.
//
// Not here: the key names (flux_params.h) or loading (core/loader).
#ifndef DIFFUSIOND_CORE_MODELS_FLUX_FLUX_WEIGHT_LAYOUT_H_
#define DIFFUSIOND_CORE_MODELS_FLUX_FLUX_WEIGHT_LAYOUT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/models/flux/flux_config.h"
#include "core/precision/weight_store.h"

namespace diffusiond {

// Applies flux_fused_splits() and flux_swapped_halves() to `weights`. The
// store's nbytes() is unchanged: splits are views, and swaps permute the
// stored bytes (dense values or FP8 codes; an FP8 scale is per tensor, so
// it stays) through a small bounce buffer. INVALID_ARGUMENT naming a tensor
// whose rows do not match the config; the store may then be part-converted
// and must be dropped.
absl::Status to_diffusers_layout(const FluxConfig& config, WeightStore* weights);

// Swaps the two row halves of the stored tensor `name` in place, then
// renames it `to`. INVALID_ARGUMENT if it is missing, has an odd row count
// or `to` exists.
absl::Status swap_row_halves(WeightStore* weights, absl::string_view name, const std::string& to);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_FLUX_FLUX_WEIGHT_LAYOUT_H_
