#include "core/memory/activation_arena.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace diffusiond {
namespace {

int64_t page_bytes() {
  static const int64_t page = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
  return page;
}

int64_t round_up(int64_t bytes, int64_t granule) { return (bytes + granule - 1) / granule * granule; }

int64_t round_up_to_pages(int64_t bytes) { return round_up(bytes, page_bytes()); }

// x86-64's PMD size; a transparent huge page is never another size there.
constexpr int64_t kHugePageBytes = int64_t{2} << 20;

// `capacity` bytes at a huge-page boundary: a huge page is only ever mapped
// at one, so an unaligned arena would lose its first and last.
void* map_huge_aligned(int64_t capacity) {
  const size_t span = static_cast<size_t>(capacity + kHugePageBytes);
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return MAP_FAILED;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePageBytes - 1) & ~uintptr_t(kHugePageBytes - 1);
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = start + span, used_end = aligned + static_cast<uintptr_t>(capacity);
  if (end > used_end) munmap(reinterpret_cast<void*>(used_end), end - used_end);
  return reinterpret_cast<void*>(aligned);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ActivationArena>> ActivationArena::map(int64_t capacity_bytes) {
  if (capacity_bytes <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("an activation arena of ", capacity_bytes, " bytes"));
  }
  const int64_t capacity = round_up_to_pages(capacity_bytes);
  // MAP_NORESERVE: the budget, not the kernel's overcommit accounting, is
  // what admitted these bytes.
  const bool huge = capacity >= kHugePageBytes;
  void* base = huge ? map_huge_aligned(capacity)
                    : mmap(nullptr, static_cast<size_t>(capacity), PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat("mapping an activation arena of ", capacity, " bytes: ", std::strerror(errno)));
  }
  // EINVAL where the kernel has no transparent huge pages: 4 KiB pages then.
  const bool advised = huge && madvise(base, static_cast<size_t>(capacity), MADV_HUGEPAGE) == 0;
  return std::unique_ptr<ActivationArena>(
      new ActivationArena(static_cast<char*>(base), capacity, advised ? kHugePageBytes : page_bytes()));
}

ActivationArena::ActivationArena(char* base, int64_t capacity, int64_t touch_granule)
    : base_(base), capacity_(capacity), touch_granule_(touch_granule) {
  blocks_.emplace(0, std::make_pair(capacity, true));
  free_.emplace(capacity, 0);
  stats_.capacity_bytes = capacity;
}

ActivationArena::~ActivationArena() { munmap(base_, static_cast<size_t>(capacity_)); }

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
