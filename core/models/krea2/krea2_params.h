// Krea 2's parameter table (diffusers name, shape and kind), its precision
// declaration and its key names. Upstream has no single-file converter for
// Krea 2: the diffusers folder's names are the only ones.
#ifndef DIFFUSIOND_CORE_MODELS_KREA2_KREA2_PARAMS_H_
#define DIFFUSIOND_CORE_MODELS_KREA2_KREA2_PARAMS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/models/krea2/krea2_config.h"
#include "core/models/param_table.h"
#include "core/precision/precision_policy.h"

namespace diffusiond {

// Every parameter of Krea2Transformer2DModel for `config`, in upstream's
// named_parameters order. Attention and SwiGLU Linears have no bias;
// scale_shift_tables are bare parameters.
std::vector<ParamSpec> krea2_parameter_table(const Krea2Config& config);

// Upstream's _skip_layerwise_casting_patterns (time_embed, norm) and its
// _keep_in_fp32_modules (norm, norm1, norm2, norm_q, norm_k). With the
// default patterns, only time_embed.linear_1/2 among the Linears stay
// dense: time_mod_proj, img_in, txt_in.linear_*, every text-fusion Linear
// (the projector too) and final_layer.linear (not "proj_out") may be FP8.
// The RMSNorm weights are stored in float32 whatever the compute dtype.
PrecisionDeclaration krea2_precision_declaration();

// The canonical name of a checkpoint tensor: diffusers names pass as they
// are.
std::optional<std::string> krea2_canonical_name(absl::string_view name);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_KREA2_KREA2_PARAMS_H_
