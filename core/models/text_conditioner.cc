#include "core/models/text_conditioner.h"

#include <algorithm>

#include "core/models/text_encoder.h"

namespace diffusiond {

int64_t TextConditioner::request_activation_bytes(const ConditionerRequest& request) const {
  TextEncoding bound;
  bound.text = request.text;
  bound.max_tokens = request.max_tokens;
  const int64_t target = tokens_bound(bound, tokenizer_ != nullptr ? tokenizer_->special_tokens_added() : 0);
  const int64_t source = request.source_hidden_states.defined() ? request.source_hidden_states.size(0) : 0;
  return condition_activation_bytes(std::max<int64_t>(source, 1), target);
}

}  // namespace diffusiond
