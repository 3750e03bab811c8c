#include "core/memory/recycled_pages.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace diffusiond {
namespace {

// A resident mapping of `bytes`, every byte set to `fill`.
AnonymousMapping written(int64_t bytes, char fill) {
  absl::StatusOr<AnonymousMapping> m = map_anonymous(bytes, Residency::kNow);
  EXPECT_TRUE(m.ok()) << m.status();
  std::memset(m->base, fill, static_cast<size_t>(bytes));
  return *m;
}

// Whether the kernel still maps the page at `p` (mincore fails with ENOMEM
// on an unmapped address).
bool mapped(const char* p) {
  unsigned char in_core = 0;
  return mincore(const_cast<char*>(p), static_cast<size_t>(page_bytes()), &in_core) == 0;
}

TEST(RecycledPages, ExactLengthComesBackWithItsPagesAndContents) {
  RecycledPages pages(int64_t{64} << 20);
  const AnonymousMapping m = written(kHugePageBytes * 2, 7);
  ASSERT_TRUE(pages.offer(m));
  EXPECT_EQ(pages.bytes(), m.length);
  std::optional<AnonymousMapping> got = pages.take(m.length);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->base, m.base);  // the same memory: nothing new to zero
  EXPECT_EQ(got->length, m.length);
  EXPECT_EQ(got->base[12345], 7);
  EXPECT_EQ(pages.bytes(), 0);
  EXPECT_EQ(pages.reused_bytes(), m.length);
  unmap_anonymous(*got);
}

TEST(RecycledPages, ALongerMappingIsCutAndItsTailKept) {
  RecycledPages pages(int64_t{64} << 20);
  const AnonymousMapping m = written(kHugePageBytes * 3, 1);
  ASSERT_TRUE(pages.offer(m));
  std::optional<AnonymousMapping> front = pages.take(kHugePageBytes + 1);
  ASSERT_TRUE(front.has_value());
  EXPECT_EQ(front->base, m.base);
  EXPECT_EQ(front->length, kHugePageBytes + page_bytes());
  EXPECT_EQ(pages.bytes(), m.length - front->length);
  // The tail serves the next weight that fits in it.
  std::optional<AnonymousMapping> tail = pages.take(pages.bytes());
  ASSERT_TRUE(tail.has_value());
  EXPECT_EQ(tail->base, m.base + front->length);
  EXPECT_FALSE(pages.take(1).has_value());
  unmap_anonymous(*front);
  unmap_anonymous(*tail);
}

TEST(RecycledPages, TakesTheShortestMappingThatFits) {
  RecycledPages pages(int64_t{64} << 20);
  const AnonymousMapping big = written(kHugePageBytes * 4, 1), small = written(kHugePageBytes, 2);
  ASSERT_TRUE(pages.offer(big));
  ASSERT_TRUE(pages.offer(small));
  std::optional<AnonymousMapping> got = pages.take(kHugePageBytes - page_bytes());
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->base, small.base);
  EXPECT_FALSE(pages.take(kHugePageBytes * 5).has_value());  // none long enough
  unmap_anonymous(*got);
}

TEST(RecycledPages, HoldsNoMoreThanItsLimit) {
  RecycledPages pages(kHugePageBytes * 3);
  const AnonymousMapping a = written(kHugePageBytes * 2, 1), b = written(kHugePageBytes * 2, 2);
  EXPECT_TRUE(pages.offer(a));
  EXPECT_FALSE(pages.offer(b));  // would hold 4 huge pages; the caller unmaps it
  unmap_anonymous(b);
  pages.limit_to(kHugePageBytes);
  EXPECT_EQ(pages.bytes(), 0);
  EXPECT_FALSE(mapped(a.base));  // given back to the kernel, not just forgotten
  const AnonymousMapping c = written(kHugePageBytes * 2, 3);
  EXPECT_FALSE(pages.offer(c));  // the limit stays lowered
  unmap_anonymous(c);
}

TEST(RecycledPages, WhatNoAllocationTookIsUnmappedAtTheEnd) {
  const AnonymousMapping m = written(kHugePageBytes, 1);
  {
    RecycledPages pages(int64_t{64} << 20);
    ASSERT_TRUE(pages.offer(m));
    EXPECT_TRUE(mapped(m.base));
  }
  EXPECT_FALSE(mapped(m.base));
}

TEST(RecycledPages, AScopeRoutesThisThreadsFreesAndEndsWithIt) {
  RecycledPages outer(int64_t{64} << 20), inner(int64_t{64} << 20);
  EXPECT_EQ(RecycledPages::current(), nullptr);
  {
    RecyclingScope a(&outer);
    EXPECT_EQ(RecycledPages::current(), &outer);
    {
      RecyclingScope b(&inner);
      release_weight_mapping(written(kHugePageBytes, 1));
      EXPECT_EQ(inner.bytes(), kHugePageBytes);
    }
    EXPECT_EQ(RecycledPages::current(), &outer);
  }
  EXPECT_EQ(RecycledPages::current(), nullptr);
  // Without a scope a free goes straight back to the kernel.
  const AnonymousMapping m = written(kHugePageBytes, 1);
  release_weight_mapping(m);
  EXPECT_FALSE(mapped(m.base));
  EXPECT_EQ(outer.bytes(), 0);
}

}  // namespace
}  // namespace diffusiond
