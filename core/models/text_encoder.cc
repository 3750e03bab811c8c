#include "core/models/text_encoder.h"

#include <filesystem>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/models/activation_estimate.h"
#include "core/models/common/tensor_text.h"
#include "core/util/status_macros.h"

namespace diffusiond {

int64_t tokens_bound(const TextEncoding& request, int64_t special_tokens) {
  const int64_t suffix =
      request.suffix.empty() ? 0 : static_cast<int64_t>(request.suffix.size()) + special_tokens + 1;
  if (request.max_tokens > 0) return request.max_tokens + suffix;
  return static_cast<int64_t>(request.text.size()) + special_tokens + 1 + suffix;
}

int64_t TextEncoder::max_tokens_of(const TextEncoding& request) const {
  return tokens_bound(request, tokenizer_ != nullptr ? tokenizer_->special_tokens_added() : 0);
}

int64_t TextEncoder::request_activation_bytes(const TextEncoding& request) const {
  return encode_activation_bytes(max_tokens_of(request));
}

absl::StatusOr<TextEncoder::Tokens> TextEncoder::tokenize(const TextEncoding& request) const {
  if (tokenizer_ == nullptr) {
    return absl::FailedPreconditionError(
        "this text encoder was loaded without a tokenizer (none in its folder or the pipeline's tokenizer folder)");
  }
  TokenizeOptions options;
  options.max_length = request.max_tokens;
  options.pad_to_max_length = request.pad_to_max_tokens;
  const std::vector<std::string> texts = {request.text};
  DIFFUSIOND_ASSIGN_OR_RETURN(TokenBatch batch, tokenize_batch(*tokenizer_, texts, options));
  std::vector<int64_t> ids(batch.ids.begin(), batch.ids.end());
  std::vector<int64_t> mask(batch.attention_mask.begin(), batch.attention_mask.end());
  int64_t count = batch.token_counts[0];
  if (!request.suffix.empty()) {
    const std::vector<std::string> suffix = {request.suffix};
    DIFFUSIOND_ASSIGN_OR_RETURN(TokenBatch tail, tokenize_batch(*tokenizer_, suffix, TokenizeOptions()));
    ids.insert(ids.end(), tail.ids.begin(), tail.ids.end());
    mask.insert(mask.end(), tail.attention_mask.begin(), tail.attention_mask.end());
    count += tail.token_counts[0];
  }
  const int64_t length = static_cast<int64_t>(ids.size());
  Tokens tokens;
  tokens.input_ids = torch::tensor(ids, torch::kInt64).reshape({1, length});
  tokens.attention_mask = torch::tensor(mask, torch::kInt64).reshape({1, length});
  tokens.count = count;
  return tokens;
}

absl::Status TextEncoder::check_token_inputs(absl::string_view name, const torch::Tensor& ids,
                                             const torch::Tensor& mask, int64_t vocab_size, int64_t hidden_states,
                                             int64_t layer) {
  if (!is_integer(ids) || ids.dim() != 2 || ids.size(0) < 1 || ids.size(1) < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " input_ids must be integer [B, L] with B, L >= 1, got ", shape_of(ids),
                     ids.defined() ? absl::StrCat(" of ", c10::toString(ids.scalar_type())) : ""));
  }
  const int64_t lowest = ids.min().item<int64_t>(), highest = ids.max().item<int64_t>();
  if (lowest < 0 || highest >= vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(name, " input_ids hold ids in [", lowest, ", ", highest,
                                                   "], but the vocabulary is [0, ", vocab_size, ")"));
  }
  if (mask.defined() && (mask.sizes() != ids.sizes() || (!is_integer(mask) && mask.scalar_type() != torch::kBool))) {
    return absl::InvalidArgumentError(absl::StrCat(name, " attention_mask must be bool or integer ", shape_of(ids),
                                                   " like input_ids, got ", shape_of(mask), " of ",
                                                   c10::toString(mask.scalar_type())));
  }
  if (layer < -hidden_states || layer >= hidden_states) {
    return absl::InvalidArgumentError(absl::StrCat(name, " hidden layer ", layer, " is out of range: the model has ",
                                                   hidden_states, " hidden states, so expected [", -hidden_states,
                                                   ", ", hidden_states - 1, "]"));
  }
  return absl::OkStatus();
}

absl::StatusOr<EncodedText> TextEncoder::encode_hidden_states(const TextEncoding& request,
                                                              const HiddenStatesFn& hidden_states) const {
  if (!request.hidden_layers.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(architecture(), " gives one hidden state, not a stack of ",
                                                   request.hidden_layers.size()));
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(Tokens tokens, tokenize(request));
  const torch::Tensor mask = request.attend_to_padding ? torch::Tensor() : tokens.attention_mask;
  DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor hidden, hidden_states(tokens.input_ids, mask, request.hidden_layer));
  EncodedText encoded;
  encoded.hidden_states = hidden[0];
  encoded.attention_mask = tokens.attention_mask[0].ne(0);
  encoded.tokens = tokens.count;
  return encoded;
}

std::vector<torch::Tensor> token_rows(const torch::Tensor& hidden, const torch::Tensor& mask) {
  std::vector<torch::Tensor> rows;
  for (int64_t i = 0; i < hidden.size(0); ++i) {
    rows.push_back(mask.defined() ? hidden[i].index({mask[i].ne(0)}) : hidden[i]);
  }
  return rows;
}

std::vector<std::string> tokenizer_folders(const Checkpoint& checkpoint) {
  namespace fs = std::filesystem;
  const fs::path path(checkpoint.path());
  const fs::path dir = checkpoint.layout() == CheckpointLayout::kDiffusersFolder ? path : path.parent_path();
  std::vector<std::string> folders = {dir.string()};
  const std::string name = dir.filename().string();
  std::string sibling = "tokenizer";
  if (absl::StartsWith(name, "text_encoder")) sibling += name.substr(std::string("text_encoder").size());
  folders.push_back((dir.parent_path() / sibling).string());
  return folders;
}

ActivationEstimate TextEncoder::step_activations(const NamedTensors& inputs, bool) const {
  const auto it = inputs.find("input_ids");
  if (it == inputs.end() || !it->second.defined() || it->second.dim() != 2) return {};
  const int64_t batch = it->second.size(0), tokens = it->second.size(1);
  return {batch * encode_activation_bytes(tokens),
          absl::StrCat(architecture(), ": ", batch, " encodes of ", tokens, " tokens")};
}

}  // namespace diffusiond
