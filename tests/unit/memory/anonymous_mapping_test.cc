#include "core/memory/anonymous_mapping.h"

#include <sys/mman.h>

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace diffusiond {
namespace {

// How many of `mapping`'s base pages are resident (mincore).
int64_t resident_pages(const AnonymousMapping& mapping) {
  std::vector<unsigned char> in_core(static_cast<size_t>(mapping.length / page_bytes()));
  EXPECT_EQ(mincore(mapping.base, static_cast<size_t>(mapping.length), in_core.data()), 0);
  int64_t resident = 0;
  for (unsigned char c : in_core) resident += c & 1;
  return resident;
}

TEST(AnonymousMapping, RoundsUpToWholePages) {
  auto mapping = map_anonymous(page_bytes() + 1, Residency::kLazy);
  ASSERT_TRUE(mapping.ok()) << mapping.status();
  EXPECT_EQ(mapping->length, 2 * page_bytes());
  EXPECT_FALSE(mapping->huge_pages);  // under one huge page: never advised
  unmap_anonymous(*mapping);
}

TEST(AnonymousMapping, LazyMappingHoldsNothingUntilWritten) {
  auto mapping = map_anonymous(3 * kHugePageBytes + 5 * page_bytes(), Residency::kLazy);
  ASSERT_TRUE(mapping.ok()) << mapping.status();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(mapping->base) % kHugePageBytes, 0u);
  EXPECT_EQ(resident_pages(*mapping), 0);
  unmap_anonymous(*mapping);
}

TEST(AnonymousMapping, ResidentNowMapsEveryPageZeroFilledAndNoMore) {
  const int64_t bytes = 3 * kHugePageBytes + 5 * page_bytes() + 17;
  auto mapping = map_anonymous(bytes, Residency::kNow);
  ASSERT_TRUE(mapping.ok()) << mapping.status();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(mapping->base) % kHugePageBytes, 0u);
  EXPECT_EQ(mapping->length, round_up_to_pages(bytes));
  // Every page resident, including the tail that no huge page can cover.
  EXPECT_EQ(resident_pages(*mapping), mapping->length / page_bytes());
  int64_t nonzero = 0;
  for (int64_t i = 0; i < mapping->length; i += 4093) nonzero += mapping->base[i] != 0;
  EXPECT_EQ(nonzero, 0);
  unmap_anonymous(*mapping);
}

// Only the whole pages inside the range: a part of one mapping never
// touches the page it shares with its neighbour, which that part writes.
TEST(AnonymousMapping, MakeResidentTakesTheWholePagesInsideTheRangeOnly) {
  auto mapping = map_anonymous(8 * page_bytes(), Residency::kLazy);  // under a huge page: base pages
  ASSERT_TRUE(mapping.ok()) << mapping.status();
  ASSERT_TRUE(make_resident(mapping->base + 100, 3 * page_bytes()).ok());  // pages 1 and 2 whole
  std::vector<unsigned char> in_core(8);
  ASSERT_EQ(mincore(mapping->base, static_cast<size_t>(mapping->length), in_core.data()), 0);
  for (int page = 0; page < 8; ++page) {
    EXPECT_EQ(in_core[page] & 1, page == 1 || page == 2 ? 1 : 0) << "page " << page;
  }
  EXPECT_TRUE(make_resident(mapping->base + 10, 20).ok());  // inside one page: nothing to do
  unmap_anonymous(*mapping);
}

TEST(AnonymousMapping, MakeResidentKeepsWhatWasWritten) {
  auto mapping = map_anonymous(4 * page_bytes(), Residency::kNow);
  ASSERT_TRUE(mapping.ok()) << mapping.status();
  for (int64_t i = 0; i < mapping->length; i += 511) mapping->base[i] = static_cast<char>(i % 127 + 1);
  ASSERT_TRUE(make_resident(mapping->base, mapping->length).ok());
  int64_t changed = 0;
  for (int64_t i = 0; i < mapping->length; i += 511) changed += mapping->base[i] != static_cast<char>(i % 127 + 1);
  EXPECT_EQ(changed, 0);
  unmap_anonymous(*mapping);
}

TEST(AnonymousMapping, RefusesAnEmptyMapping) {
  EXPECT_EQ(map_anonymous(0, Residency::kNow).status().code(), absl::StatusCode::kInvalidArgument);
  unmap_anonymous(AnonymousMapping{});  // a no-op
}

}  // namespace
}  // namespace diffusiond
