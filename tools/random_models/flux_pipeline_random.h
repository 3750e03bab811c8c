// A random-weight FLUX.1 pipeline folder in diffusers' layout — what
// Generate runs in the demo and the tests when no real weights are at hand:
// model_index.json (FluxPipeline), a CLIP text encoder with its BPE
// tokenizer (text_encoder/, tokenizer/), a T5 encoder with its
// SentencePiece tokenizer (text_encoder_2/, tokenizer_2/), the FLUX
// transformer, the 16-channel VAE with FLUX's scaling and shift, and the
// scheduler config. The image is noise.
#ifndef DIFFUSIOND_TOOLS_RANDOM_MODELS_FLUX_PIPELINE_RANDOM_H_
#define DIFFUSIOND_TOOLS_RANDOM_MODELS_FLUX_PIPELINE_RANDOM_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "core/models/clip/clip_config.h"
#include "core/models/flux/flux_config.h"
#include "core/models/t5/t5_config.h"
#include "core/models/vae/vae_config.h"

namespace diffusiond {

struct FluxPipelineSizes {
  ClipTextConfig clip;
  T5Config t5;
  FluxConfig transformer;  // pooled_projection_dim = clip's width, joint_attention_dim = t5's
  VaeConfig vae;
};

// The demo's: the demo CLIP, T5 and FLUX.1-dev transformer, the demo VAE
// with FLUX's scaling_factor 0.3611 and shift_factor 0.1159.
FluxPipelineSizes demo_flux_pipeline_sizes();

// Writes the pipeline into `folder` (created), weights drawn from `seed`.
// UNAVAILABLE if it cannot be written.
absl::Status write_random_flux_pipeline(const FluxPipelineSizes& sizes, const std::string& folder, uint64_t seed);

}  // namespace diffusiond

#endif  // DIFFUSIOND_TOOLS_RANDOM_MODELS_FLUX_PIPELINE_RANDOM_H_
