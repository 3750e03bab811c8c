#include "core/models/qwen3/z_image_text_encoding.h"

#include "core/util/exception_status.h"
#include "core/util/status_macros.h"

namespace diffusiond {

std::vector<torch::Tensor> token_rows(const torch::Tensor& hidden, const torch::Tensor& mask) {
  std::vector<torch::Tensor> rows;
  for (int64_t i = 0; i < hidden.size(0); ++i) {
    rows.push_back(mask.defined() ? hidden[i].index({mask[i].ne(0)}) : hidden[i]);
  }
  return rows;
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
