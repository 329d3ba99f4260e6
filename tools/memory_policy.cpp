#include "tools/memory_policy.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#include <atomic>
#include <cerrno>

namespace meshsim {

void keep_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, static_cast<int>(kHeapGrowthBytes));
#endif
}

HugePageRange huge_page_range(std::uintptr_t address, std::size_t bytes) {
  const std::uintptr_t mask = kHugePageBytes - 1;
  return {(address + mask) & ~mask, (address + bytes) & ~mask};
}

void advise_huge_pages(void* block, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const HugePageRange r = huge_page_range(reinterpret_cast<std::uintptr_t>(block), bytes);
  if (r.end > r.begin) {
    const int saved = errno;  // a refused hint (no THP, a range just trimmed) is not an error
    // NOLINTNEXTLINE(performance-no-int-to-ptr): the page-aligned interior of the block
    madvise(reinterpret_cast<void*>(r.begin), r.end - r.begin, MADV_HUGEPAGE);
    errno = saved;
  }
#else
  (void)block;
  (void)bytes;
#endif
}

void advise_heap_growth() {
#if defined(__GLIBC__) && defined(__linux__)
  static std::atomic<std::uintptr_t> advised_end{0};
  // sbrk(0) reads glibc's record of the program break (no system call once the heap exists).
  const auto heap_end = reinterpret_cast<std::uintptr_t>(sbrk(0));
  // The mark follows the break down as well as up: after glibc trims the heap, the range it
  // grows into again is new memory to advise.
  std::uintptr_t end = advised_end.load(std::memory_order_relaxed);
  while (heap_end != end) {
    if (advised_end.compare_exchange_weak(end, heap_end)) {
      if (end != 0 && heap_end > end) {
        // NOLINTNEXTLINE(performance-no-int-to-ptr): the heap's new range
        advise_huge_pages(reinterpret_cast<void*>(end), heap_end - end);
      }
      return;
    }
  }
#endif
}

}  // namespace meshsim
