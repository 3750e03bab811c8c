// Wan 2.x's pipeline recipe (diffusers' WanPipeline), text to one frame: the
// UMT5 text encoder, asked for the last hidden states of the cleaned prompt
// (wan_prompt_clean.h), its valid rows only → the Wan transformer, which
// zero-pads them to max_sequence_length rows (attended, so the count is part
// of the recipe) → Wan's causal 3-D VAE (AutoencoderKLWan).
//
// A Generate makes one image, so its latents are one frame [C, 1, H/8,
// W/8] (WanPipeline with num_frames=1), which the causal VAE
// (core/models/wan_vae/) decodes; a video's frames (decode_frames) wait
// for the video output. Wan 2.2's second expert (transformer_2,
// boundary_ratio) is not a component yet; a Denoise runs both experts
// (later_segments).
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
