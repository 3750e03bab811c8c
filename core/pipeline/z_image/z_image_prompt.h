// The text side of Z-Image's prompt encoding (diffusers ZImagePipeline
// `_encode_prompt`), up to the ids the text encoder takes:
//
//   1. each prompt p goes through Qwen3's chat template as
//      apply_chat_template([{"role": "user", "content": p}], tokenize=False,
//      add_generation_prompt=True, enable_thinking=True);
//   2. the batch is tokenized with padding="max_length",
//      max_length=max_sequence_length (512 in the pipeline), truncation=True:
//      right truncation (a long prompt loses its template tail), right
//      padding with the pad token, attention mask 1 for real tokens.
//
// The template is not interpreted (there is no Jinja engine here): the
// functions below produce what Qwen3's template renders for exactly this
// call, one user message with no system message and no tools.
//
// Not here: the text encoder (Qwen3 model) that turns ids into embeddings.
#ifndef DIFFUSIOND_CORE_PIPELINE_Z_IMAGE_Z_IMAGE_PROMPT_H_
#define DIFFUSIOND_CORE_PIPELINE_Z_IMAGE_Z_IMAGE_PROMPT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/text/token_batch.h"
#include "core/text/tokenizer.h"

namespace diffusiond {

// Returns Qwen3's chat template rendered for one user message `prompt` with
// add_generation_prompt=True:
//   "<|im_start|>user\n" + prompt + "<|im_end|>\n<|im_start|>assistant\n"
// and, if `enable_thinking` is false, an empty "<think>\n\n</think>\n\n" after
// it. (The template's branches for a system message, tools, assistant turns
// and tool responses do not apply to this call.) The prompt is inserted
// verbatim: special-token text in it becomes special tokens.
std::string render_qwen3_user_turn(absl::string_view prompt, bool enable_thinking);

// Returns the rendering Z-Image tokenizes: render_qwen3_user_turn(prompt,
// /*enable_thinking=*/true).
std::string render_z_image_prompt(absl::string_view prompt);

// Returns the ids and attention mask Z-Image's text encoder gets for
// `prompts`: each rendered (render_z_image_prompt), encoded, then
// pad_or_truncate to `max_sequence_length` with the tokenizer's pad token.
// Returns INVALID_ARGUMENT for an empty batch, a prompt that is not valid
// UTF-8 (naming the prompt and byte offset), a tokenizer without a pad token,
// or max_sequence_length < 1.
absl::StatusOr<TokenBatch> encode_z_image_prompts(const Tokenizer& tokenizer,
                                                  absl::Span<const std::string> prompts,
                                                  int64_t max_sequence_length);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PIPELINE_Z_IMAGE_Z_IMAGE_PROMPT_H_
