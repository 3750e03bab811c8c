// Byte-level BPE over one pre-tokenized piece: the vocabulary (token string
// <-> id), the merge ranks, and the merge loop.
//
// The loop reproduces the reference (GPT-2 / Qwen2 / CLIP slow tokenizer)
// exactly: start from one symbol per byte; repeatedly take the lowest-ranked
// merge present among adjacent pairs and apply it to every occurrence, left
// to right without overlap; stop when no adjacent pair has a merge. It runs
// in O(n log n) with a heap rather than rescanning the word per merge.
//
// An end-of-word suffix (CLIP's "</w>") marks a piece's last symbol: that
// symbol starts as its byte symbol followed by the suffix ("d</w>"), a token
// of its own, so merges that end a word are distinct from those inside one.
//
// Not here: pre-tokenization and added tokens (core/text/bpe_tokenizer.h).
#ifndef DIFFUSIOND_CORE_TEXT_BPE_H_
#define DIFFUSIOND_CORE_TEXT_BPE_H_

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

// Immutable after create(); thread-safe.
class BpeModel {
 public:
  // Builds the model from `vocab` (token spelled in byte symbols -> id) and
  // `merges` (pairs of tokens; rank = position), with `end_of_word_suffix`
  // appended to each piece's last symbol (empty: none). Returns
  // INVALID_ARGUMENT, prefixed with `what`, for a negative or repeated id, a
  // byte symbol (or, with a suffix, a byte symbol plus the suffix) missing
  // from the vocabulary, a repeated merge, or a merge whose parts or result
  // are not in the vocabulary.
  static absl::StatusOr<BpeModel> create(
      const std::vector<std::pair<std::string, int32_t>>& vocab,
      const std::vector<std::pair<std::string, std::string>>& merges, absl::string_view what,
      absl::string_view end_of_word_suffix = "");

  // Returns the ids of `bytes` (one piece's raw bytes) after merging.
  std::vector<int32_t> encode_piece(absl::string_view bytes) const;

  // Returns the id of `token` (spelled in byte symbols), or -1.
  int32_t id(absl::string_view token) const;

  // Returns the token with `id` (spelled in byte symbols), or null.
  const std::string* token(int32_t id) const;

  // Returns one more than the largest id.
  int32_t id_limit() const { return id_limit_; }

 private:
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }

  absl::flat_hash_map<std::string, int32_t> ids_;
  absl::flat_hash_map<int32_t, std::string> tokens_;
  absl::flat_hash_map<uint64_t, Merge> merges_;
  std::array<int32_t, 256> byte_ids_{};
  std::array<int32_t, 256> last_byte_ids_{};  // a piece's last byte: with the suffix, if any
  int32_t id_limit_ = 0;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_TEXT_BPE_H_
