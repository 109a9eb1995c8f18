#pragma once
// Large buffers of many small objects (a run's outcomes: some 20,000 of them, 13 MB) asked to be
// backed by huge pages where the kernel offers them to a process that asks (transparent huge
// pages in "madvise" mode): a first touch of 4 KiB pages costs a page fault each, some 20 us on
// a virtual machine, which was most of a run's cold read (docs/BENCHMARKS.md, issue 57).

#include <cstddef>
#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace kforge::report::detail {

// Advises the 2 MiB pages that [data, data + bytes) touches as huge-page candidates, those at
// its ends too (a buffer's first and last 2 MiB would otherwise be 4 KiB pages: up to 1,000
// faults). Only an advice, on whatever of that range is mapped (a neighbour in the same pages
// may be put on the same huge page); nothing changes where the kernel has no transparent huge
// pages, or for a buffer under 2 MiB; the memory's contents are untouched.
inline void advise_huge_pages(const void* data, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  if (data == nullptr || bytes < kHuge) return;
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = begin & ~(kHuge - 1);
  const std::uintptr_t last = (begin + bytes + kHuge - 1) & ~(kHuge - 1);
  (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

}  // namespace kforge::report::detail
