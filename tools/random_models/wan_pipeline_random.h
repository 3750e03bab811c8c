// A random-weight Wan pipeline folder in diffusers' layout — what Generate
// runs in the demo and the tests when no real weights are at hand:
// model_index.json (WanPipeline), a UMT5 encoder with its SentencePiece
// tokenizer, the Wan transformer (and for Wan 2.2 a second expert,
// transformer_2, with model_index.json's boundary_ratio), the causal 3-D
// VAE and UniPC's scheduler config. The video is noise.
//
// Not here: the models' own writers (t5_random.h, wan_random.h,
// wan_vae_random.h).
#ifndef DIFFUSIOND_TOOLS_RANDOM_MODELS_WAN_PIPELINE_RANDOM_H_
#define DIFFUSIOND_TOOLS_RANDOM_MODELS_WAN_PIPELINE_RANDOM_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "core/models/t5/t5_config.h"
#include "core/models/wan/wan_config.h"
#include "core/models/wan_vae/wan_vae_config.h"

namespace diffusiond {

struct WanPipelineSizes {
  T5Config text_encoder;  // UMT5
  WanConfig transformer;  // text_dim = text_encoder.d_model
  WanVaeConfig vae;
  // Wan 2.2: a second expert (transformer_2, other weights, the same
  // config) taking over below this boundary_ratio. 0: Wan 2.1, one expert.
  double boundary_ratio = 0;
};

// The demo's: a 2-layer UMT5 of width 64, a 2-layer Wan transformer of 2
// heads x 32 and the demo Wan VAE (a few frames of 256 x 256 in seconds on
// two cores).
WanPipelineSizes demo_wan_pipeline_sizes();

// Writes the pipeline into `folder` (created), weights drawn from `seed`.
// INVALID_ARGUMENT for sizes that do not fit together or validate;
// UNAVAILABLE if it cannot be written.
absl::Status write_random_wan_pipeline(const WanPipelineSizes& sizes, const std::string& folder, uint64_t seed);

}  // namespace diffusiond

#endif  // DIFFUSIOND_TOOLS_RANDOM_MODELS_WAN_PIPELINE_RANDOM_H_
