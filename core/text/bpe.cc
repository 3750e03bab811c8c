#include "core/text/bpe.h"

#include <algorithm>
#include <queue>

#include "absl/strings/str_cat.h"
#include "core/text/byte_level.h"
#include "core/util/utf8.h"

namespace diffusiond {
namespace {

// One adjacent pair that has a merge, as it was when queued; it is stale
// once either side has been merged into something else.
struct Candidate {
  int32_t rank;
  int32_t left;  // index of the left symbol (symbols keep their first byte's index)
  int32_t left_id;
  int32_t right_id;
};

struct LaterFirst {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
  }
};

struct Symbol {
  int32_t id;
  int32_t prev;  // -1 at the start
  int32_t next;  // -1 at the end
  bool alive;
};

}  // namespace

absl::StatusOr<BpeModel> BpeModel::create(
    const std::vector<std::pair<std::string, int32_t>>& vocab,
    const std::vector<std::pair<std::string, std::string>>& merges, absl::string_view what,
    absl::string_view end_of_word_suffix) {
  BpeModel model;
  for (const auto& [token, id] : vocab) {
    if (absl::Status valid = validate_utf8(token, what); !valid.ok()) return valid;
    if (id < 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": token '", token, "' has negative id ", id));
    }
    if (!model.ids_.emplace(token, id).second) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": token '", token, "' appears twice"));
    }
    if (!model.tokens_.emplace(id, token).second) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": id ", id, " is given to both '",
                                                     model.tokens_[id], "' and '", token, "'"));
    }
    model.id_limit_ = std::max(model.id_limit_, id + 1);
  }
  for (int b = 0; b < 256; ++b) {
    std::string symbol;
    append_utf8(byte_to_symbol(static_cast<uint8_t>(b)), &symbol);
    const int32_t id = model.id(symbol);
    if (id < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": byte-level symbol '", symbol, "' (byte ", b,
          ") is not in the vocabulary; expected a byte-level BPE vocabulary with all 256 byte symbols"));
    }
    model.byte_ids_[b] = id;
    model.last_byte_ids_[b] = id;
    if (end_of_word_suffix.empty()) continue;
    const std::string last = absl::StrCat(symbol, end_of_word_suffix);
    model.last_byte_ids_[b] = model.id(last);
    if (model.last_byte_ids_[b] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": word-final symbol '", last, "' (byte ", b,
                                                     ") is not in the vocabulary; expected all 256 byte symbols with '",
                                                     end_of_word_suffix, "' too"));
    }
  }
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    const int32_t left_id = model.id(left), right_id = model.id(right);
    const int32_t result = model.id(absl::StrCat(left, right));
    if (left_id < 0 || right_id < 0 || result < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": merge ", rank, " '", left, " ", right, "': '",
          left_id < 0 ? left : right_id < 0 ? right : absl::StrCat(left, right),
          "' is not in the vocabulary"));
    }
    const Merge merge{static_cast<int32_t>(rank), result};
    if (!model.merges_.emplace(pair_key(left_id, right_id), merge).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": merge ", rank, " '", left, " ", right, "' repeats an earlier merge"));
    }
  }
  return model;
}

int32_t BpeModel::id(absl::string_view token) const {
  const auto it = ids_.find(token);
  return it == ids_.end() ? -1 : it->second;
}

const std::string* BpeModel::token(int32_t id) const {
  const auto it = tokens_.find(id);
  return it == tokens_.end() ? nullptr : &it->second;
}

std::vector<int32_t> BpeModel::encode_piece(absl::string_view bytes) const {
  const int32_t n = static_cast<int32_t>(bytes.size());
  std::vector<Symbol> symbols(n);
  for (int32_t i = 0; i < n; ++i) {
    const uint8_t byte = static_cast<uint8_t>(bytes[i]);
    symbols[i] = {i + 1 < n ? byte_ids_[byte] : last_byte_ids_[byte], i - 1, i + 1 < n ? i + 1 : -1, true};
  }
  std::priority_queue<Candidate, std::vector<Candidate>, LaterFirst> queue;
  const auto consider = [&](int32_t left) {
    if (left < 0 || symbols[left].next < 0) return;
    const int32_t left_id = symbols[left].id, right_id = symbols[symbols[left].next].id;
    const auto it = merges_.find(pair_key(left_id, right_id));
    if (it != merges_.end()) queue.push({it->second.rank, left, left_id, right_id});
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);

  // One rank at a time: every occurrence of the best pair is merged, left to
  // right, before a pair formed by those merges is looked at, even one with
  // a lower rank. That is the reference's order, and it differs from a plain
  // best-first queue only on merge lists where a merge's rank precedes the
  // ranks of the merges that make its parts.
  std::vector<Candidate> batch;
  while (!queue.empty()) {
    const int32_t rank = queue.top().rank;
    batch.clear();
    while (!queue.empty() && queue.top().rank == rank) {
      batch.push_back(queue.top());
      queue.pop();
    }
    for (const Candidate& c : batch) {
      Symbol& left = symbols[c.left];
      if (!left.alive || left.id != c.left_id || left.next < 0) continue;
      Symbol& right = symbols[left.next];
      if (right.id != c.right_id) continue;
      left.id = merges_.find(pair_key(c.left_id, c.right_id))->second.result;
      right.alive = false;
      left.next = right.next;
      if (right.next >= 0) symbols[right.next].prev = c.left;
      consider(left.prev);
      consider(c.left);
    }
  }
  std::vector<int32_t> ids;
  for (int32_t i = n > 0 ? 0 : -1; i >= 0; i = symbols[i].next) ids.push_back(symbols[i].id);
  return ids;
}

}  // namespace diffusiond
