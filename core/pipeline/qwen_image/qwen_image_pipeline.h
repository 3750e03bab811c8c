// Qwen-Image's pipeline recipe (diffusers' QwenImagePipeline): the
// Qwen2.5-VL text encoder, asked for the last hidden states of the
// templated prompt (qwen_image_prompt.h) → the Qwen-Image transformer, with
// true classifier-free guidance → the Qwen-Image VAE (AutoencoderKLQwenImage).
// The encoder is not ported yet (unported_architectures.h): Generate
// refuses the pipeline naming it, and EncodePrompt serves the family only
// once a Qwen2.5-VL encoder can be loaded. The VAE decodes the pipeline's
// [C, h, w] latents as one frame (core/models/wan_vae/).
#ifndef DIFFUSIOND_CORE_PIPELINE_QWEN_IMAGE_QWEN_IMAGE_PIPELINE_H_
#define DIFFUSIOND_CORE_PIPELINE_QWEN_IMAGE_QWEN_IMAGE_PIPELINE_H_

#include <cstdint>

#include "core/pipeline/pipeline_family.h"

namespace diffusiond {

// QwenImagePipeline's max_sequence_length default: the rows kept after the
// template's prefix is dropped.
inline constexpr int64_t kQwenImageMaxSequenceLength = 512;

// Lives for the process.
const PipelineFamily* qwen_image_pipeline();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PIPELINE_QWEN_IMAGE_QWEN_IMAGE_PIPELINE_H_
