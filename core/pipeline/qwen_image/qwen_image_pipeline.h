// Qwen-Image's pipeline recipe (diffusers' QwenImagePipeline): the
// Qwen2.5-VL text encoder, asked for the last hidden state (after the final
// norm) of the templated prompt (qwen_image_prompt.h) → the Qwen-Image
// transformer, with true classifier-free guidance → the Qwen-Image VAE
// (AutoencoderKLQwenImage, core/models/wan_vae/, decoding the pipeline's
// [C, h, w] latents as one frame).
//
// Upstream tokenizes up to 1024 + 34 tokens, pads a batch to its longest
// prompt at the end, drops the 34-token prefix of each prompt's real rows,
// re-pads to the longest and keeps max_sequence_length rows (512 by
// default, at most 1024), dropping a mask of all ones. Each prompt is
// encoded alone here, so there is no padding and no mask: the kept rows
// are the real ones, which do not depend on what follows them (causal
// attention). So only the 34 + max_sequence_length tokens that can be kept
// are encoded.
#ifndef DIFFUSIOND_CORE_PIPELINE_QWEN_IMAGE_QWEN_IMAGE_PIPELINE_H_
#define DIFFUSIOND_CORE_PIPELINE_QWEN_IMAGE_QWEN_IMAGE_PIPELINE_H_

#include <cstdint>
#include <string>

#include "core/pipeline/pipeline_family.h"

namespace diffusiond {

// QwenImagePipeline's max_sequence_length default: the rows kept after the
// template's prefix is dropped.
inline constexpr int64_t kQwenImageMaxSequenceLength = 512;

// How QwenImagePipeline asks its encoder for `prompt` at
// `max_sequence_length` kept rows: the template, hidden_states[-1], at most
// 34 + max_sequence_length tokens (the rows past them are never kept).
TextEncoding qwen_image_text_encoding(const std::string& prompt, int64_t max_sequence_length);

// Lives for the process.
const PipelineFamily* qwen_image_pipeline();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PIPELINE_QWEN_IMAGE_QWEN_IMAGE_PIPELINE_H_
