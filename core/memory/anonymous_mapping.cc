#include "core/memory/anonymous_mapping.h"

#include <sys/mman.h>
#include <unistd.h>

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

// Makes every page of `mapping` resident. MADV_POPULATE_WRITE faults the
// range in as a write would, in huge pages where advised, and reports a
// failure instead of leaving it to the OOM killer; a kernel without it gets
// one write per page instead.
absl::Status populate(const AnonymousMapping& mapping) {
  if (madvise(mapping.base, static_cast<size_t>(mapping.length), MADV_POPULATE_WRITE) == 0) {
    return absl::OkStatus();
  }
  if (errno != EINVAL) {
    return absl::ResourceExhaustedError(absl::StrCat("making ", mapping.length,
                                                     " bytes resident: ", std::strerror(errno)));
  }
  const int64_t stride = mapping.huge_pages ? kHugePageBytes : page_bytes();
  volatile char* p = mapping.base;
  for (int64_t offset = 0; offset < mapping.length; offset += stride) p[offset] = 0;
  return absl::OkStatus();
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
    if (absl::Status s = populate(mapping); !s.ok()) {
      unmap_anonymous(mapping);
      return s;
    }
  }
  return mapping;
}

void unmap_anonymous(const AnonymousMapping& mapping) {
  if (mapping.base != nullptr) munmap(mapping.base, static_cast<size_t>(mapping.length));
}

}  // namespace diffusiond
