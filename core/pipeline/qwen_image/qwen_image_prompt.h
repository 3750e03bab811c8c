// Qwen-Image's prompt template (diffusers' QwenImagePipeline
// `_get_qwen_prompt_embeds`), which Krea 2 also uses: a fixed system turn
// asking for a description of the image, the prompt as the user turn, then
// the assistant's turn opened. The system turn and the user turn's opening
// are a fixed 34 tokens whose hidden states are dropped: the denoiser is
// conditioned on the prompt and the template's tail only.
//
// Not here: the text encoder (core/models/qwen25_vl/) or the families
// (qwen_image_pipeline.h, core/pipeline/krea2/).
#ifndef DIFFUSIOND_CORE_PIPELINE_QWEN_IMAGE_QWEN_IMAGE_PROMPT_H_
#define DIFFUSIOND_CORE_PIPELINE_QWEN_IMAGE_QWEN_IMAGE_PROMPT_H_

#include <torch/types.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/models/text_encoder.h"

namespace diffusiond {

// The template around the prompt. Special-token text in the prompt becomes
// special tokens, as upstream's str.format leaves it.
inline constexpr absl::string_view kQwenImagePromptPrefix =
    "<|im_start|>system\nDescribe the image by detailing the color, shape, size, texture, quantity, text, "
    "spatial relationships of the objects and background:<|im_end|>\n<|im_start|>user\n";
inline constexpr absl::string_view kQwenImagePromptSuffix = "<|im_end|>\n<|im_start|>assistant\n";
// The prefix's length in Qwen2 tokens (the pipelines'
// prompt_template_encode_start_idx): its rows are dropped.
inline constexpr int64_t kQwenImagePromptDropTokens = 34;

// Returns prefix + prompt + suffix.
std::string render_qwen_image_prompt(absl::string_view prompt);

// Returns the rows of `encoded.hidden_states` ([L, ...]) a templated prompt
// conditions on: those of real tokens, the first kQwenImagePromptDropTokens
// dropped, then at most `max_rows`. INVALID_ARGUMENT, opening with
// `family`, when no row is left past the prefix (the encoder did not get
// the template, or cut it).
absl::StatusOr<torch::Tensor> qwen_image_prompt_rows(const EncodedText& encoded, int64_t max_rows,
                                                     absl::string_view family);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PIPELINE_QWEN_IMAGE_QWEN_IMAGE_PROMPT_H_
