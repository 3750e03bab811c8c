#include "core/text/z_image_prompt.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/text/utf8.h"
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

absl::StatusOr<TokenBatch> pad_or_truncate(const std::vector<std::vector<int32_t>>& rows,
                                           int64_t max_length, int32_t pad_id) {
  if (max_length < 1) {
    return absl::InvalidArgumentError(absl::StrCat("max_length is ", max_length, "; expected at least 1"));
  }
  if (pad_id < 0) return absl::InvalidArgumentError(absl::StrCat("pad id is ", pad_id, "; expected >= 0"));
  TokenBatch out;
  out.batch = static_cast<int64_t>(rows.size());
  out.length = max_length;
  out.ids.assign(static_cast<size_t>(out.batch * max_length), pad_id);
  out.attention_mask.assign(out.ids.size(), 0);
  for (size_t r = 0; r < rows.size(); ++r) {
    const int64_t kept = std::min<int64_t>(static_cast<int64_t>(rows[r].size()), max_length);
    const size_t base = r * static_cast<size_t>(max_length);
    std::copy(rows[r].begin(), rows[r].begin() + kept, out.ids.begin() + base);
    std::fill(out.attention_mask.begin() + base, out.attention_mask.begin() + base + kept, 1);
    out.token_counts.push_back(kept);
  }
  return out;
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
