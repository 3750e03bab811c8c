// A random-weight AnimaTextConditioner (Anima's LLM adapter) in diffusers'
// folder layout, the text_conditioner/ of the demo's Anima pipeline: no
// real weights can be downloaded here.
//
// Not here: the weight-drawing rule (random_weights.h), the T5 tokenizer it
// reads the prompt with (t5_random.h), the model
// (core/models/anima_conditioner/).
#ifndef DIFFUSIOND_TOOLS_RANDOM_MODELS_ANIMA_CONDITIONER_RANDOM_H_
#define DIFFUSIOND_TOOLS_RANDOM_MODELS_ANIMA_CONDITIONER_RANDOM_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "core/models/anima_conditioner/anima_conditioner_config.h"

namespace diffusiond {

// The demo's: Anima's layout (self-attention, RMSNorm, MLP ratio 4,
// outputs padded to 512 rows) at 2 blocks of width 256 (4 heads x 64),
// reading a 128-wide text encoder and writing the demo Cosmos
// transformer's text_embed_dim, over write_t5_tokenizer's default
// tokenizer (its 356 ids in a vocabulary of 384): 2.3 M parameters.
AnimaConditionerConfig demo_anima_conditioner_config();

// Writes a diffusers model folder (config.json and a bf16
// diffusion_pytorch_model.safetensors) into `folder` (created), weights
// drawn from `seed` (write_random_weights). INVALID_ARGUMENT for a config
// that does not validate, UNAVAILABLE if it cannot be written.
absl::Status write_random_anima_conditioner(const AnimaConditionerConfig& config, const std::string& folder,
                                            uint64_t seed);

}  // namespace diffusiond

#endif  // DIFFUSIOND_TOOLS_RANDOM_MODELS_ANIMA_CONDITIONER_RANDOM_H_
