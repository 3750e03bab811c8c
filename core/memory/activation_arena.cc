#include "core/memory/activation_arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "core/memory/anonymous_mapping.h"

namespace diffusiond {
namespace {

int64_t round_up(int64_t bytes, int64_t granule) { return (bytes + granule - 1) / granule * granule; }

}  // namespace

absl::StatusOr<std::unique_ptr<ActivationArena>> ActivationArena::map(int64_t capacity_bytes) {
  if (capacity_bytes <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("an activation arena of ", capacity_bytes, " bytes"));
  }
  auto mapping = map_anonymous(capacity_bytes, Residency::kLazy);
  if (!mapping.ok()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("mapping an activation arena: ", mapping.status().message()));
  }
  return std::unique_ptr<ActivationArena>(new ActivationArena(
      mapping->base, mapping->length, mapping->huge_pages ? kHugePageBytes : page_bytes()));
}

ActivationArena::ActivationArena(char* base, int64_t capacity, int64_t touch_granule)
    : base_(base), capacity_(capacity), touch_granule_(touch_granule) {
  blocks_.emplace(0, std::make_pair(capacity, true));
  free_.emplace(capacity, 0);
  stats_.capacity_bytes = capacity;
}

ActivationArena::~ActivationArena() { unmap_anonymous({base_, capacity_, false}); }

void* ActivationArena::allocate(int64_t bytes) {
  const int64_t size = round_up_to_pages(bytes);
  auto fit = free_.lower_bound({size, 0});
  if (fit == free_.end()) {
    ++stats_.refusals;
    return nullptr;
  }
  // The few largest tensors (a transformer's FFN hidden states) go to the
  // top end, in the highest free block that fits; the rest to the best fit.
  // Best fit throughout left 3 of every mid-size Z-Image step's FFN tensors
  // without a block (smaller tensors living longer cut up the large ones'
  // holes), and so did first fit by address for the rest; apart, none.
  const bool large = size * kLargeFraction >= capacity_;
  if (large) {
    for (auto it = std::next(fit); it != free_.end(); ++it) {
      if (it->second > fit->second) fit = it;
    }
  }
  const auto [block_size, block_offset] = *fit;
  free_.erase(fit);
  const int64_t rest = block_size - size;
  const int64_t offset = large ? block_offset + rest : block_offset;
  if (rest > 0) {
    const int64_t rest_offset = large ? block_offset : block_offset + size;
    blocks_[rest_offset] = {rest, true};
    free_.emplace(rest, rest_offset);
  }
  blocks_[offset] = {size, false};
  ++stats_.allocations;
  ++stats_.live_blocks;
  stats_.live_bytes += size;
  stats_.peak_live_bytes = std::max(stats_.peak_live_bytes, stats_.live_bytes);
  stats_.high_water_bytes = std::max(stats_.high_water_bytes, offset + size);
  return base_ + offset;
}

void ActivationArena::free(void* data) {
  int64_t offset = static_cast<char*>(data) - base_;
  auto it = blocks_.find(offset);
  int64_t size = it->second.first;
  --stats_.live_blocks;
  stats_.live_bytes -= size;
  // Merged with a free neighbour on either side, so that a later larger
  // tensor finds the whole span.
  if (auto next = std::next(it); next != blocks_.end() && next->second.second) {
    free_.erase({next->second.first, next->first});
    size += next->second.first;
    blocks_.erase(next);
  }
  if (it != blocks_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.second) {
      free_.erase({prev->second.first, prev->first});
      offset = prev->first;
      size += prev->second.first;
      blocks_.erase(it);
      it = prev;
    }
  }
  it->second = {size, true};
  free_.emplace(size, offset);
}

bool ActivationArena::contains(const void* data) const {
  const char* p = static_cast<const char*>(data);
  return p >= base_ && p < base_ + capacity_;
}

int64_t ActivationArena::release_free_pages() {
  int64_t released = 0;
  for (const auto& [size, offset] : free_) {
    // Beyond the high water's granule nothing was ever touched.
    const int64_t end = std::min(offset + size, round_up(stats_.high_water_bytes, touch_granule_));
    if (end <= offset) continue;
    madvise(base_ + offset, static_cast<size_t>(end - offset), MADV_DONTNEED);
    released += end - offset;
  }
  // What lies above the highest live block is untouched again.
  int64_t top = 0;
  for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) {
    if (!it->second.second) {
      top = it->first + it->second.first;
      break;
    }
  }
  stats_.high_water_bytes = top;
  return released;
}

ActivationArenaStats ActivationArena::stats() const { return stats_; }

}  // namespace diffusiond
