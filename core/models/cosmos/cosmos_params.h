// The Cosmos transformer's parameter table (every parameter's canonical
// diffusers name, shape and kind), its precision declaration, and the key
// map from the original Cosmos-Predict2 naming of Anima's community single
// file ("net." prefix, the LLM adapter under "net.llm_adapter.", which this
// map leaves out: the text conditioner reads it, anima_conditioner/).
#ifndef DIFFUSIOND_CORE_MODELS_COSMOS_COSMOS_PARAMS_H_
#define DIFFUSIOND_CORE_MODELS_COSMOS_COSMOS_PARAMS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/models/cosmos/cosmos_config.h"
#include "core/models/param_table.h"
#include "core/precision/precision_policy.h"

namespace diffusiond {

// Every parameter of CosmosTransformer3DModel for `config` (no learnable
// positional embedding, no projections of other Cosmos variants).
std::vector<ParamSpec> cosmos_parameter_table(const CosmosConfig& config);

// Upstream's _skip_layerwise_casting_patterns (patch_embed, final_layer,
// norm) and _keep_in_fp32_modules (learnable_pos_embed), plus the time
// embedder (t_embedder), which the project's seed keeps with the patch
// embedding and the final layer. On diffusers names 'norm' keeps every
// block's AdaLN-LoRA Linears (norm1/2/3.linear_1/2) and norm_out; the
// patch embedding, norm_out and proj_out are default patterns already, so
// beyond the defaults the declaration keeps time_embed.t_embedder alone.
PrecisionDeclaration cosmos_precision_declaration();

// Maps a checkpoint name in diffusers or original Cosmos-Predict2 naming
// (with or without "net." or ComfyUI's "model.diffusion_model." prefix) to
// its diffusers name, as convert_cosmos_transformer_checkpoint_to_diffusers
// renames Cosmos 2.0 keys after Anima's split. Nothing for the LLM
// adapter's tensors and the training counters and RoPE buffers upstream
// removes (accum_*, pos_embedder.*, _extra_state).
std::optional<std::string> cosmos_canonical_name(absl::string_view name);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_COSMOS_COSMOS_PARAMS_H_
