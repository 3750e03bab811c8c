// Anima's pipeline recipe (diffusers' AnimaModularPipeline with
// AnimaAutoBlocks): the raw prompt (no chat template) through Qwen3, its
// last hidden states (after the final norm) times the attention mask →
// the text conditioner (AnimaTextConditioner), which reads them through
// the same prompt's T5 token ids (its own t5_tokenizer/) and pads to 512
// rows → the Cosmos transformer, flow-match Euler with shift 3, plain
// classifier-free guidance 4 with an empty default negative → the
// Qwen-Image VAE (AutoencoderKLQwenImage), one frame.
//
// The empty negative gives Qwen no token: its one masked row is zeroed by
// the mask, so the conditioner's cross-attention attends to nothing (0,
// not NaN), as upstream's one id-0 token with mask 0.
#ifndef DIFFUSIOND_CORE_PIPELINE_ANIMA_ANIMA_PIPELINE_H_
#define DIFFUSIOND_CORE_PIPELINE_ANIMA_ANIMA_PIPELINE_H_

#include "core/pipeline/pipeline_family.h"

namespace diffusiond {

// Lives for the process.
const PipelineFamily* anima_pipeline();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PIPELINE_ANIMA_ANIMA_PIPELINE_H_
