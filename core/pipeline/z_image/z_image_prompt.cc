#include "core/pipeline/z_image/z_image_prompt.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/util/utf8.h"
#include "core/text/token_batch.h"
#include "core/util/status_macros.h"

namespace diffusiond {

std::string render_qwen3_user_turn(absl::string_view prompt, bool enable_thinking) {
  // The template's user-message branch, then its generation prompt; the
  // empty think block appears only when enable_thinking is false.
  std::string text = absl::StrCat("<|im_start|>user\n", prompt, "<|im_end|>\n", "<|im_start|>assistant\n");
  if (!enable_thinking) text += "<think>\n\n</think>\n\n";
  return text;
}

std::string render_z_image_prompt(absl::string_view prompt) {
  return render_qwen3_user_turn(prompt, /*enable_thinking=*/true);
}

absl::StatusOr<TokenBatch> encode_z_image_prompts(const Tokenizer& tokenizer,
                                                  absl::Span<const std::string> prompts,
                                                  int64_t max_sequence_length) {
  if (prompts.empty()) return absl::InvalidArgumentError("no prompts to encode");
  if (tokenizer.pad_id() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(tokenizer.source(), ": no pad token, which padding to max_sequence_length needs"));
  }
  std::vector<std::vector<int32_t>> rows;
  rows.reserve(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    // Checked before rendering so that the offset is the prompt's own.
    DIFFUSIOND_RETURN_IF_ERROR(validate_utf8(prompts[i], absl::StrCat("prompt ", i)));
    DIFFUSIOND_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenizer.encode(render_z_image_prompt(prompts[i])));
    rows.push_back(std::move(ids));
  }
  return pad_or_truncate(rows, max_sequence_length, tokenizer.pad_id());
}

}  // namespace diffusiond
