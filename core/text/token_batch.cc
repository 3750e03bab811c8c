#include "core/text/token_batch.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/util/utf8.h"
#include "core/util/status_macros.h"

namespace diffusiond {

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

absl::StatusOr<TokenBatch> tokenize_batch(const Tokenizer& tokenizer, absl::Span<const std::string> texts,
                                          const TokenizeOptions& options) {
  if (texts.empty()) return absl::InvalidArgumentError("no texts to tokenize");
  const int64_t wrapping = options.add_special_tokens ? tokenizer.special_tokens_added() : 0;
  if (options.max_length > 0 && options.max_length <= wrapping) {
    return absl::InvalidArgumentError(absl::StrCat("max_length ", options.max_length, " leaves no room for text beside ",
                                                   wrapping, " special tokens"));
  }
  std::vector<std::vector<int32_t>> rows;
  rows.reserve(texts.size());
  int64_t longest = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    // Checked here so that the message names the text and its own offset.
    DIFFUSIOND_RETURN_IF_ERROR(validate_utf8(texts[i], absl::StrCat("text ", i)));
    DIFFUSIOND_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenizer.encode(texts[i]));
    if (options.max_length > 0 && static_cast<int64_t>(ids.size()) > options.max_length - wrapping) {
      ids.resize(static_cast<size_t>(options.max_length - wrapping));
    }
    if (options.add_special_tokens) ids = tokenizer.with_special_tokens(std::move(ids));
    longest = std::max<int64_t>(longest, static_cast<int64_t>(ids.size()));
    rows.push_back(std::move(ids));
  }
  const int64_t length = options.pad_to_max_length && options.max_length > 0 ? options.max_length : longest;
  const bool padded = std::any_of(rows.begin(), rows.end(),
                                  [&](const std::vector<int32_t>& r) { return static_cast<int64_t>(r.size()) < length; });
  if (padded && tokenizer.pad_id() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(tokenizer.source(), ": no pad token, which padding needs"));
  }
  // A batch of empty rows (no special tokens, empty texts) keeps one pad column.
  return pad_or_truncate(rows, std::max<int64_t>(length, 1), std::max(tokenizer.pad_id(), 0));
}

}  // namespace diffusiond
