#include "core/memory/anonymous_mapping.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

// Linux 5.14; older headers lack it, and older kernels answer EINVAL.
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace diffusiond {
namespace {

// `length` bytes at a huge-page boundary: a huge page is only ever mapped
// at one, so an unaligned mapping would lose its first and last.
void* map_huge_aligned(int64_t length, int flags) {
  const size_t span = static_cast<size_t>(length + kHugePageBytes);
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (raw == MAP_FAILED) return MAP_FAILED;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePageBytes - 1) & ~uintptr_t(kHugePageBytes - 1);
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = start + span, used_end = aligned + static_cast<uintptr_t>(length);
  if (end > used_end) munmap(reinterpret_cast<void*>(used_end), end - used_end);
  return reinterpret_cast<void*>(aligned);
}

// One read and write back per page, for kernels without
// MADV_POPULATE_WRITE (before 5.14). A huge page needs only one, but a
// range cannot tell whether the kernel granted one, so each base page gets
// its own.
void touch_pages(char* begin, int64_t n) {
  volatile char* p = begin;
  for (int64_t offset = 0; offset < n; offset += page_bytes()) p[offset] = p[offset];
}

}  // namespace

int64_t page_bytes() {
  static const int64_t page = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
  return page;
}

int64_t round_up_to_pages(int64_t bytes) { return (bytes + page_bytes() - 1) / page_bytes() * page_bytes(); }

absl::StatusOr<AnonymousMapping> map_anonymous(int64_t bytes, Residency residency) {
  if (bytes <= 0) return absl::InvalidArgumentError(absl::StrCat("an anonymous mapping of ", bytes, " bytes"));
  AnonymousMapping mapping;
  mapping.length = round_up_to_pages(bytes);
  // MAP_NORESERVE for lazy mappings: the budget, not the kernel's overcommit
  // accounting, admitted these bytes. Memory made resident now is committed
  // either way.
  const int flags = MAP_PRIVATE | MAP_ANONYMOUS | (residency == Residency::kLazy ? MAP_NORESERVE : 0);
  const bool huge = mapping.length >= kHugePageBytes;
  void* base = huge ? map_huge_aligned(mapping.length, flags)
                    : mmap(nullptr, static_cast<size_t>(mapping.length), PROT_READ | PROT_WRITE, flags, -1, 0);
  if (base == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat("mapping ", mapping.length, " bytes: ", std::strerror(errno)));
  }
  mapping.base = static_cast<char*>(base);
  // EINVAL where the kernel has no transparent huge pages: 4 KiB pages then.
  mapping.huge_pages = huge && madvise(base, static_cast<size_t>(mapping.length), MADV_HUGEPAGE) == 0;
  if (residency == Residency::kNow) {
    if (absl::Status s = make_resident(mapping.base, mapping.length); !s.ok()) {
      unmap_anonymous(mapping);
      return s;
    }
  }
  return mapping;
}

absl::Status make_resident(void* begin, int64_t n) {
  const uintptr_t mask = ~uintptr_t(page_bytes() - 1);
  const uintptr_t first = (reinterpret_cast<uintptr_t>(begin) + page_bytes() - 1) & mask;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(begin) + static_cast<uintptr_t>(std::max<int64_t>(n, 0))) & mask;
  if (end <= first) return absl::OkStatus();
  char* const start = reinterpret_cast<char*>(first);
  const int64_t length = static_cast<int64_t>(end - first);
  if (madvise(start, static_cast<size_t>(length), MADV_POPULATE_WRITE) == 0) return absl::OkStatus();
  if (errno != EINVAL) {
    return absl::ResourceExhaustedError(absl::StrCat("making ", length, " bytes resident: ", std::strerror(errno)));
  }
  touch_pages(start, length);
  return absl::OkStatus();
}

void unmap_anonymous(const AnonymousMapping& mapping) {
  if (mapping.base != nullptr) munmap(mapping.base, static_cast<size_t>(mapping.length));
}

}  // namespace diffusiond
