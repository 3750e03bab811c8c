#include "core/memory/activation_arena.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace diffusiond {
namespace {

const int64_t kPage = sysconf(_SC_PAGESIZE);

std::unique_ptr<ActivationArena> arena_of_pages(int64_t pages) {
  absl::StatusOr<std::unique_ptr<ActivationArena>> arena = ActivationArena::map(pages * kPage);
  EXPECT_TRUE(arena.ok()) << arena.status();
  return arena.ok() ? std::move(*arena) : nullptr;
}

// Which of `pages` pages from `p` are resident, as the kernel says.
std::vector<bool> resident(void* p, int64_t pages) {
  std::vector<unsigned char> in_core(static_cast<size_t>(pages));
  EXPECT_EQ(mincore(p, static_cast<size_t>(pages * kPage), in_core.data()), 0);
  std::vector<bool> out;
  for (unsigned char c : in_core) out.push_back((c & 1) != 0);
  return out;
}

TEST(ActivationArena, RefusesANonPositiveCapacity) {
  EXPECT_FALSE(ActivationArena::map(0).ok());
  EXPECT_FALSE(ActivationArena::map(-1).ok());
}

// 64 pages: a block under 8 pages is small and goes to the low end.
constexpr int64_t kPages = 64;

TEST(ActivationArena, BlocksAreWholePagesPackedFromTheLowEnd) {
  std::unique_ptr<ActivationArena> arena = arena_of_pages(kPages);
  ASSERT_NE(arena, nullptr);
  char* a = static_cast<char*>(arena->allocate(1));
  char* b = static_cast<char*>(arena->allocate(kPage + 1));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % kPage, 0u);
  EXPECT_EQ(b - a, kPage);
  EXPECT_TRUE(arena->contains(a));
  EXPECT_TRUE(arena->contains(a + kPages * kPage - 1));
  EXPECT_FALSE(arena->contains(a + kPages * kPage));
  const ActivationArenaStats s = arena->stats();
  EXPECT_EQ(s.capacity_bytes, kPages * kPage);
  EXPECT_EQ(s.live_bytes, 3 * kPage);
  EXPECT_EQ(s.live_blocks, 2);
  EXPECT_EQ(s.high_water_bytes, 3 * kPage);
}

TEST(ActivationArena, TakesTheSmallestFreeBlockThatFits) {
  std::unique_ptr<ActivationArena> arena = arena_of_pages(kPages);
  ASSERT_NE(arena, nullptr);
  // Holes of 3 pages at 0 and 1 page at 4, with live blocks beside them.
  char* hole3 = static_cast<char*>(arena->allocate(3 * kPage));
  ASSERT_NE(arena->allocate(kPage), nullptr);
  char* hole1 = static_cast<char*>(arena->allocate(kPage));
  ASSERT_NE(arena->allocate(kPage), nullptr);
  arena->free(hole3);
  arena->free(hole1);
  EXPECT_EQ(arena->allocate(kPage), hole1) << "the one-page hole fits exactly";
  EXPECT_EQ(arena->allocate(2 * kPage), hole3) << "the smallest hole large enough";
  EXPECT_EQ(arena->allocate(kPage), hole3 + 2 * kPage) << "what the split left";
  EXPECT_EQ(arena->stats().high_water_bytes, 6 * kPage);
}

TEST(ActivationArena, LargeBlocksGoToTheTopEnd) {
  std::unique_ptr<ActivationArena> arena = arena_of_pages(kPages);
  ASSERT_NE(arena, nullptr);
  char* small = static_cast<char*>(arena->allocate(kPage));
  char* large = static_cast<char*>(arena->allocate(8 * kPage));  // an eighth of the capacity
  char* next_large = static_cast<char*>(arena->allocate(8 * kPage));
  char* next_small = static_cast<char*>(arena->allocate(2 * kPage));
  ASSERT_NE(next_small, nullptr);
  EXPECT_EQ(large - small, (kPages - 8) * kPage);
  EXPECT_EQ(next_large - small, (kPages - 16) * kPage) << "the top of the highest free block";
  EXPECT_EQ(next_small - small, kPage) << "small ones stay at the bottom";
  arena->free(large);
  EXPECT_EQ(arena->allocate(8 * kPage), large) << "the highest hole, not the lowest";
  EXPECT_EQ(arena->stats().high_water_bytes, kPages * kPage);
}

TEST(ActivationArena, FreedNeighboursMergeIntoOneBlock) {
  std::unique_ptr<ActivationArena> arena = arena_of_pages(kPages);
  ASSERT_NE(arena, nullptr);
  void* a = arena->allocate(2 * kPage);
  void* b = arena->allocate(2 * kPage);
  void* c = arena->allocate(2 * kPage);
  ASSERT_NE(arena->allocate((kPages - 6) * kPage), nullptr) << "the rest, at the top";
  EXPECT_EQ(arena->allocate(1), nullptr) << "full";
  arena->free(a);
  arena->free(c);
  EXPECT_EQ(arena->allocate(3 * kPage), nullptr) << "4 pages free, but in two holes";
  arena->free(b);  // merges with both sides
  EXPECT_EQ(arena->allocate(6 * kPage), a);
  const ActivationArenaStats s = arena->stats();
  EXPECT_EQ(s.refusals, 2);
  EXPECT_EQ(s.allocations, 5);
  EXPECT_EQ(s.peak_live_bytes, kPages * kPage);
}

TEST(ActivationArena, ReleaseGivesBackOnlyTheFreePages) {
  std::unique_ptr<ActivationArena> arena = arena_of_pages(kPages);
  ASSERT_NE(arena, nullptr);
  char* live = static_cast<char*>(arena->allocate(2 * kPage));
  char* freed = static_cast<char*>(arena->allocate(2 * kPage));
  ASSERT_NE(freed, nullptr);
  std::memset(live, 0x5A, static_cast<size_t>(2 * kPage));
  std::memset(freed, 0x5A, static_cast<size_t>(2 * kPage));
  arena->free(freed);
  EXPECT_EQ(resident(live, 4), (std::vector<bool>{true, true, true, true})) << "freed pages stay for reuse";
  EXPECT_EQ(arena->release_free_pages(), 2 * kPage) << "up to the high water, not the whole free tail";
  EXPECT_EQ(resident(live, 4), (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(live[0], 0x5A);
  EXPECT_EQ(live[2 * kPage - 1], 0x5A);
  EXPECT_EQ(arena->stats().high_water_bytes, 2 * kPage) << "only the live block is touched now";
  char* again = static_cast<char*>(arena->allocate(kPage));
  EXPECT_EQ(again, freed);
  EXPECT_EQ(again[0], 0) << "a released page comes back zeroed";
}

// A write into an arena of huge pages can make a whole 2 MiB resident, past
// the block written; a release must reach those pages too. Passes the same
// where the kernel gives 4 KiB pages.
TEST(ActivationArena, ReleaseReachesEveryPageAWriteCouldTouch) {
  constexpr int64_t kHuge = int64_t{2} << 20;
  std::unique_ptr<ActivationArena> arena = arena_of_pages(4 * kHuge / kPage);
  ASSERT_NE(arena, nullptr);
  char* block = static_cast<char*>(arena->allocate(kPage));
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % kHuge, 0u) << "mapped on a huge-page boundary";
  std::memset(block, 0x5A, static_cast<size_t>(kPage));
  EXPECT_TRUE(resident(block, 1)[0]);
  arena->free(block);
  EXPECT_GE(arena->release_free_pages(), kPage);
  const std::vector<bool> after = resident(block, 4 * kHuge / kPage);
  EXPECT_EQ(std::count(after.begin(), after.end(), true), 0) << "no page of the arena stays resident";
}

}  // namespace
}  // namespace diffusiond
