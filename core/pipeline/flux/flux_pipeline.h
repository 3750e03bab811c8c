// FLUX.1's pipeline recipe (diffusers' FluxPipeline), dev and schnell: CLIP
// (pooled, 77 tokens) and T5 (512 tokens, padding attended) text encoders →
// the FLUX transformer, with the distilled guidance scalar for dev → the
// 16-channel AutoencoderKL with FLUX's scaling and shift from its config.
#ifndef DIFFUSIOND_CORE_PIPELINE_FLUX_FLUX_PIPELINE_H_
#define DIFFUSIOND_CORE_PIPELINE_FLUX_FLUX_PIPELINE_H_

#include <cstdint>

#include "core/pipeline/pipeline_family.h"

namespace diffusiond {

// FluxPipeline's max_sequence_length default (schnell users often pass 256).
inline constexpr int64_t kFluxT5MaxTokens = 512;
// CLIPTokenizer's model_max_length, which FluxPipeline pads and cuts to.
inline constexpr int64_t kFluxClipMaxTokens = 77;

// Lives for the process.
const PipelineFamily* flux_pipeline();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PIPELINE_FLUX_FLUX_PIPELINE_H_
