#include "core/pipeline/z_image/z_image_text_encoding.h"

#include "core/pipeline/z_image/z_image_prompt.h"
#include "core/util/exception_status.h"
#include "core/util/status_macros.h"

namespace diffusiond {

TextEncoding z_image_text_encoding(const std::string& prompt) {
  TextEncoding encoding;
  encoding.text = render_z_image_prompt(prompt);
  encoding.max_tokens = kZImageMaxSequenceLength;
  // Upstream pads to 512 and keeps the real tokens' rows. The padding sits
  // at the end under causal attention, so no real row reads it: the prompt
  // alone gives the same rows (Qwen3Parity.PromptsEncodedAloneWithoutPadding
  // against upstream's padded pipeline) without running 512 rows for a
  // 20-token prompt.
  encoding.pad_to_max_tokens = false;
  encoding.hidden_layer = kZImageTextHiddenLayer;
  return encoding;
}

absl::StatusOr<std::vector<torch::Tensor>> z_image_caption_features(
    const Qwen3Model& encoder, const torch::Tensor& input_ids, const torch::Tensor& attention_mask) {
  DIFFUSIOND_ASSIGN_OR_RETURN(
      torch::Tensor hidden, encoder.hidden_states(input_ids, attention_mask, kZImageTextHiddenLayer));
  return status_of("selecting Z-Image caption rows",
                   [&]() -> absl::StatusOr<std::vector<torch::Tensor>> {
                     return token_rows(hidden, attention_mask);
                   });
}

}  // namespace diffusiond
