// What Z-Image takes from its Qwen3 text encoder (diffusers'
// ZImagePipeline._encode_prompt): hidden_states[-2] of the templated,
// right-padded prompts, and per prompt only the rows of real tokens.
//
// Not here: the chat template (z_image_prompt.h) or the forward itself
// (core/models/qwen3).
#ifndef DIFFUSIOND_CORE_PIPELINE_Z_IMAGE_Z_IMAGE_TEXT_ENCODING_H_
#define DIFFUSIOND_CORE_PIPELINE_Z_IMAGE_Z_IMAGE_TEXT_ENCODING_H_

#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/models/qwen3/qwen3_model.h"
#include "core/models/text_encoder.h"

namespace diffusiond {

// The hidden state Z-Image conditions on: the output of the second to last
// decoder layer (neither the last layer nor the final norm runs).
inline constexpr int64_t kZImageTextHiddenLayer = -2;
// ZImagePipeline's default max_sequence_length.
inline constexpr int64_t kZImageMaxSequenceLength = 512;

// How ZImagePipeline asks its encoder for `prompt`: the chat template,
// padded to max_sequence_length and masked, hidden_states[-2].
TextEncoding z_image_text_encoding(const std::string& prompt);

// Encodes tokenised prompts as Z-Image's caption features:
// token_rows(hidden_states[-2], attention_mask), one [L_i, hidden_size]
// tensor per prompt at the encoder's compute dtype. `input_ids` int64 [B,
// L]; `attention_mask` [B, L], nonzero = token, or undefined. Errors as
// Qwen3Model::hidden_states.
absl::StatusOr<std::vector<torch::Tensor>> z_image_caption_features(
    const Qwen3Model& encoder, const torch::Tensor& input_ids, const torch::Tensor& attention_mask);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PIPELINE_Z_IMAGE_Z_IMAGE_TEXT_ENCODING_H_
