#include "core/memory/recycled_pages.h"

#include <cassert>
#include <iterator>

namespace diffusiond {
namespace {

thread_local RecycledPages* current_pages = nullptr;

}  // namespace

RecycledPages::~RecycledPages() { limit_to(0); }

bool RecycledPages::offer(const AnonymousMapping& mapping) {
  if (mapping.base == nullptr || bytes_ + mapping.length > limit_) return false;
  by_length_.emplace(mapping.length, mapping);
  bytes_ += mapping.length;
  return true;
}

std::optional<AnonymousMapping> RecycledPages::take(int64_t bytes) {
  assert(bytes > 0);
  const int64_t length = round_up_to_pages(bytes);
  auto it = by_length_.lower_bound(length);
  if (it == by_length_.end()) return std::nullopt;
  AnonymousMapping out = it->second;
  by_length_.erase(it);
  bytes_ -= out.length;
  if (out.length > length) {
    // The tail stays for a later weight. Cutting inside a huge page splits
    // it into base pages; no page is freed or zeroed either way.
    AnonymousMapping tail{out.base + length, out.length - length, out.huge_pages};
    out.length = length;
    by_length_.emplace(tail.length, tail);
    bytes_ += tail.length;
  }
  reused_bytes_ += out.length;
  return out;
}

void RecycledPages::limit_to(int64_t bytes) {
  limit_ = bytes;
  while (bytes_ > limit_ && !by_length_.empty()) {
    auto longest = std::prev(by_length_.end());
    unmap_anonymous(longest->second);
    bytes_ -= longest->first;
    by_length_.erase(longest);
  }
}

RecycledPages* RecycledPages::current() { return current_pages; }

RecyclingScope::RecyclingScope(RecycledPages* pages) : previous_(current_pages) { current_pages = pages; }

RecyclingScope::~RecyclingScope() { current_pages = previous_; }

void release_weight_mapping(const AnonymousMapping& mapping) {
  if (current_pages != nullptr && current_pages->offer(mapping)) return;
  unmap_anonymous(mapping);
}

}  // namespace diffusiond
