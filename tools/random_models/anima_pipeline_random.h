// A random-weight Anima pipeline folder in diffusers' layout — what
// Generate runs in the demo and the tests when no real weights are at hand:
// modular_model_index.json (AnimaModularPipeline's save_config), a Qwen3
// text encoder in transformers' layout with its Qwen2 tokenizer
// (text_encoder/, tokenizer/), the T5 tokenizer the text conditioner reads
// the prompt with (t5_tokenizer/), the AnimaTextConditioner
// (text_conditioner/), the Cosmos transformer, AutoencoderKLQwenImage and
// upstream's scheduler config (flow-match Euler, shift 3). The image is
// noise.
#ifndef DIFFUSIOND_TOOLS_RANDOM_MODELS_ANIMA_PIPELINE_RANDOM_H_
#define DIFFUSIOND_TOOLS_RANDOM_MODELS_ANIMA_PIPELINE_RANDOM_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "core/models/anima_conditioner/anima_conditioner_config.h"
#include "core/models/cosmos/cosmos_config.h"
#include "core/models/qwen3/qwen3_config.h"
#include "core/models/wan_vae/wan_vae_config.h"

namespace diffusiond {

struct AnimaPipelineSizes {
  Qwen3Config text_encoder;
  // source_dim = text_encoder.hidden_size, target_dim =
  // transformer.text_embed_dim; its vocabulary holds the T5 tokenizer's ids.
  AnimaConditionerConfig text_conditioner;
  CosmosConfig transformer;
  WanVaeConfig vae;  // AutoencoderKLQwenImage, z_dim = transformer's latent channels
};

// The demo's: Z-Image's demo Qwen3 (2 layers of width 128), the demo
// conditioner (2 blocks of width 256), the demo Cosmos transformer (4
// layers, 4 heads x 64) and the demo AutoencoderKLQwenImage (a 256 x 256
// image in seconds on two cores).
AnimaPipelineSizes demo_anima_pipeline_sizes();

// Writes the pipeline into `folder` (created), weights drawn from `seed`;
// the index last. INVALID_ARGUMENT for sizes that do not validate or
// agree, UNAVAILABLE if it cannot be written.
absl::Status write_random_anima_pipeline(const AnimaPipelineSizes& sizes, const std::string& folder, uint64_t seed);

}  // namespace diffusiond

#endif  // DIFFUSIOND_TOOLS_RANDOM_MODELS_ANIMA_PIPELINE_RANDOM_H_
