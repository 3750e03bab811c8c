#include "core/pipeline/qwen_image/qwen_image_prompt.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/models/common/tensor_text.h"

namespace diffusiond {

std::string render_qwen_image_prompt(absl::string_view prompt) {
  return absl::StrCat(kQwenImagePromptPrefix, prompt, kQwenImagePromptSuffix);
}

absl::StatusOr<torch::Tensor> qwen_image_prompt_rows(const EncodedText& encoded, int64_t max_rows,
                                                     absl::string_view family) {
  const torch::Tensor& hidden = encoded.hidden_states;
  const torch::Tensor& mask = encoded.attention_mask;
  if (!hidden.defined() || hidden.dim() < 2 ||
      (mask.defined() && (mask.dim() != 1 || mask.size(0) != hidden.size(0)))) {
    return absl::InvalidArgumentError(
        absl::StrCat(family, "'s text encoder must give hidden states [L, ...] and a mask [L], got ", shape_of(hidden),
                     " and ", shape_of(mask)));
  }
  // Every row a real token's (the prompt was encoded unpadded), or the
  // padded rows dropped, as upstream's _extract_masked_hidden does.
  const torch::Tensor rows = mask.defined() ? hidden.index({mask.to(torch::kBool)}) : hidden;
  if (rows.size(0) <= kQwenImagePromptDropTokens) {
    return absl::InvalidArgumentError(absl::StrCat(family, "'s text encoder gave ", rows.size(0),
                                                   " token rows, no more than the template's ",
                                                   kQwenImagePromptDropTokens, "-token prefix"));
  }
  const int64_t kept = std::min(rows.size(0) - kQwenImagePromptDropTokens, max_rows);
  return rows.narrow(0, kQwenImagePromptDropTokens, kept);
}

}  // namespace diffusiond
