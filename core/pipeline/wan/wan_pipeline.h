// Wan 2.x's pipeline recipe (diffusers' WanPipeline), text to video: the
// UMT5 text encoder, asked for the last hidden states of the cleaned prompt
// (wan_prompt_clean.h), its valid rows only → the Wan transformer, which
// zero-pads them to max_sequence_length rows (attended, so the count is part
// of the recipe) → Wan's causal 3-D VAE (AutoencoderKLWan), whose frames
// stream out as it decodes them.
//
// The latents are [C, (num_frames − 1) / 4 + 1, H / 8, W / 8], drawn as
// upstream's prepare_latents draws them. Wan 2.2's folders add a second
// expert (transformer_2) and model_index.json's boundary_ratio: the two run
// as segments of one Denoise (expert_handovers()), each with its own
// guidance scale (guidance_scale, guidance_scale_2).
//
// Not here: running it (generate.h), the models (core/models/wan,
// core/models/t5, core/models/wan_vae).
#ifndef DIFFUSIOND_CORE_PIPELINE_WAN_WAN_PIPELINE_H_
#define DIFFUSIOND_CORE_PIPELINE_WAN_WAN_PIPELINE_H_

#include <cstdint>

#include "core/pipeline/pipeline_family.h"

namespace diffusiond {

// WanPipeline's max_sequence_length default: at most this many tokens, and
// the rows the text is zero-padded to for the transformer.
inline constexpr int64_t kWanMaxSequenceLength = 512;

// Lives for the process.
const PipelineFamily* wan_pipeline();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PIPELINE_WAN_WAN_PIPELINE_H_
