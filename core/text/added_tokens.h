// Added tokens (Qwen's <|im_start|>, <think>, ...): tokens outside BPE that
// are cut out of the text before pre-tokenization and map straight to their
// ids, wherever they occur. Matching is leftmost, then longest, over every
// added token, special or not (the reference's `split_special_tokens` false;
// none of Qwen's added tokens strips spaces or needs word boundaries).
//
// Not here: the BPE pieces between them (core/text/bpe_tokenizer.h).
#ifndef DIFFUSIOND_CORE_TEXT_ADDED_TOKENS_H_
#define DIFFUSIOND_CORE_TEXT_ADDED_TOKENS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

struct AddedToken {
  int32_t id = -1;
  std::string content;   // matched verbatim
  bool special = false;  // recorded from the file; matching ignores it
};

// One stretch of text: either an added token or plain text between them.
struct TextSegment {
  absl::string_view text;  // points into the text given to split()
  int32_t added_id;        // the added token's id, or -1 for plain text
};

// Immutable after create(); thread-safe.
class AddedTokenSplitter {
 public:
  // Returns INVALID_ARGUMENT, prefixed with `what`, for an empty content, a
  // negative id, or a content or id given twice.
  static absl::StatusOr<AddedTokenSplitter> create(const std::vector<AddedToken>& tokens,
                                                   absl::string_view what);

  // Returns `text` cut into segments, in order, with no empty plain segment.
  // The views point into `text`.
  std::vector<TextSegment> split(absl::string_view text) const;

  // Returns the added token with `id`, or null.
  const AddedToken* find(int32_t id) const;

  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  std::vector<AddedToken> tokens_;
  absl::flat_hash_map<int32_t, size_t> by_id_;
  // Per first byte, the indices into tokens_ that start with it, longest first.
  absl::flat_hash_map<char, std::vector<size_t>> by_first_byte_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_TEXT_ADDED_TOKENS_H_
