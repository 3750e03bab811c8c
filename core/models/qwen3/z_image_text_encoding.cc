#include "core/models/qwen3/z_image_text_encoding.h"

#include "core/text/z_image_prompt.h"
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

absl::StatusOr<EncodedPrompt> Qwen3Model::encode_prompt(const std::string& prompt) const {
  if (tokenizer_ == nullptr) {
    return absl::FailedPreconditionError(
        "this text encoder was loaded without a tokenizer (none in its folder or a sibling tokenizer/ folder)");
  }
  const std::vector<std::string> prompts = {prompt};
  DIFFUSIOND_ASSIGN_OR_RETURN(TokenBatch batch,
                              encode_z_image_prompts(*tokenizer_, prompts, kZImageMaxSequenceLength));
  std::vector<int64_t> ids(batch.ids.begin(), batch.ids.end());
  std::vector<int64_t> mask(batch.attention_mask.begin(), batch.attention_mask.end());
  const torch::Tensor input_ids = torch::tensor(ids, torch::kInt64).reshape({batch.batch, batch.length});
  const torch::Tensor attention_mask = torch::tensor(mask, torch::kInt64).reshape({batch.batch, batch.length});
  DIFFUSIOND_ASSIGN_OR_RETURN(std::vector<torch::Tensor> features,
                              z_image_caption_features(*this, input_ids, attention_mask));
  EncodedPrompt encoded;
  encoded.tokens = batch.token_counts[0];
  encoded.conditioning.tensors["cap_feats"] = features[0];
  return encoded;
}

}  // namespace diffusiond
