// Random-weight Cosmos (Anima's DiT) checkpoints in the real diffusers
// folder format, for the demo model, tests and benchmarks (no real weights
// can be downloaded here).
//
// Not here: the weight-drawing rule (random_weights.h), the model itself
// (core/models/cosmos/).
#ifndef DIFFUSIOND_TOOLS_RANDOM_MODELS_COSMOS_RANDOM_H_
#define DIFFUSIOND_TOOLS_RANDOM_MODELS_COSMOS_RANDOM_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/models/cosmos/cosmos_config.h"

namespace diffusiond {

// The built-in demo model: Anima's layout at the demo models' width, 4
// heads x 64, 4 layers, text_embed_dim 256, adaln_lora_dim 64 (~10 MB of
// bf16).
CosmosConfig demo_cosmos_config();
// The benchmarks' mid-size configuration: Anima's real width
// (docs/configs/anima-transformer.json: 16 heads x 128, text_embed_dim
// 1024, adaln_lora_dim 256, MLP ratio 4) with 8 of its 28 layers, 0.55 B
// parameters; its pipeline feeds 512 conditioner rows.
CosmosConfig mid_size_cosmos_config();

// Writes a diffusers model folder (config.json and a bf16
// diffusion_pytorch_model.safetensors) with weights drawn from `seed` as
// the reference fixtures draw them (write_random_weights), in
// parameter-table order; the schedule is the family's default (flow-match
// Euler, shift 3). Creates `folder`; INVALID_ARGUMENT for a config that
// does not validate, UNAVAILABLE if the folder cannot be written.
absl::Status write_random_cosmos(const CosmosConfig& config, absl::string_view folder, uint64_t seed);

}  // namespace diffusiond

#endif  // DIFFUSIOND_TOOLS_RANDOM_MODELS_COSMOS_RANDOM_H_
