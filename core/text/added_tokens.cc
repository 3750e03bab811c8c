#include "core/text/added_tokens.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace diffusiond {

absl::StatusOr<AddedTokenSplitter> AddedTokenSplitter::create(const std::vector<AddedToken>& tokens,
                                                              absl::string_view what) {
  AddedTokenSplitter splitter;
  absl::flat_hash_set<std::string> contents;
  for (const AddedToken& token : tokens) {
    if (token.content.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": added token ", token.id, " has empty content"));
    }
    if (token.id < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": added token '", token.content, "' has negative id ", token.id));
    }
    if (!contents.insert(token.content).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": added token '", token.content, "' appears twice"));
    }
    if (!splitter.by_id_.emplace(token.id, splitter.tokens_.size()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": added token id ", token.id, " appears twice"));
    }
    splitter.by_first_byte_[token.content[0]].push_back(splitter.tokens_.size());
    splitter.tokens_.push_back(token);
  }
  for (auto& [first, indices] : splitter.by_first_byte_) {
    std::stable_sort(indices.begin(), indices.end(), [&](size_t a, size_t b) {
      return splitter.tokens_[a].content.size() > splitter.tokens_[b].content.size();
    });
  }
  return splitter;
}

std::vector<TextSegment> AddedTokenSplitter::split(absl::string_view text) const {
  std::vector<TextSegment> segments;
  size_t plain_start = 0;
  for (size_t i = 0; i < text.size();) {
    const auto candidates = by_first_byte_.find(text[i]);
    const AddedToken* match = nullptr;
    if (candidates != by_first_byte_.end()) {
      for (const size_t index : candidates->second) {
        if (absl::StartsWith(text.substr(i), tokens_[index].content)) {
          match = &tokens_[index];
          break;  // longest first
        }
      }
    }
    if (match == nullptr) {
      ++i;
      continue;
    }
    if (i > plain_start) segments.push_back({text.substr(plain_start, i - plain_start), -1});
    segments.push_back({text.substr(i, match->content.size()), match->id});
    i += match->content.size();
    plain_start = i;
  }
  if (text.size() > plain_start) segments.push_back({text.substr(plain_start), -1});
  return segments;
}

const AddedToken* AddedTokenSplitter::find(int32_t id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

}  // namespace diffusiond
