#pragma once
// How meshsim's processes use the allocator.
//
// keep_freed_memory(): glibc returns every freed block above its mmap threshold (128 KiB, growing
// to 32 MiB) to the system, so the next allocation of that size faults its pages in again: in a
// virtual machine a 1024^3 bf16 GEMM's converted operands cost more in page faults than in
// arithmetic (49 ms against 23 ms). keep_freed_memory() keeps freed memory for reuse instead; the
// resident peak may grow by what is kept (`meshsim step` of the 4,096-GPU benchmark plan: 373 ->
// 616 MB). Called first thing by meshsim and the benchmark programs. It still lets glibc trim a
// free top above 1 GiB: never trimming (M_TRIM_THRESHOLD -1) made the default 70B sweep 1.13x
// slower with a 740 MB larger peak (medians of 3 runs, 42.6 s against 39.7 s).
//
// advise_huge_pages(): a large Program or engine array is written once, op by op, so its first
// touch of every 4 KiB page is a page fault; in a virtual machine those faults were a quarter to
// a half of a large simulation's time. Linux backs a range advised MADV_HUGEPAGE with 2 MiB pages
// (transparent huge pages, in "always" or "madvise" mode; a no-op under "never"), 512 times fewer
// faults, and 512 times fewer TLB entries for the ops a pass walks. keep_freed_memory() also
// grows the heap in steps of kHeapGrowthBytes, and meshsim's operator new (tools/huge_page_new.cpp,
// the executable and the step benchmark) advises each step as it appears (advise_heap_growth) and
// every block of kHugePageAdviceBytes or more. `meshsim ring-attention --cp 512 --seq 524288`:
// 0.58x the wall time with every allocation advised (glibc's glibc.malloc.hugetlb=1 tunable), 0.82x
// with large blocks alone.
#include <cstddef>
#include <cstdint>

namespace meshsim {

void keep_freed_memory();

inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;
inline constexpr std::size_t kHugePageAdviceBytes = std::size_t{8} << 20;
inline constexpr std::size_t kHeapGrowthBytes = std::size_t{64} << 20;

// The whole 2 MiB pages inside [address, address + bytes): begin rounded up, end rounded down
// (end <= begin: none).
struct HugePageRange {
  std::uintptr_t begin = 0, end = 0;
};
HugePageRange huge_page_range(std::uintptr_t address, std::size_t bytes);

// Advises the whole 2 MiB pages of the block MADV_HUGEPAGE (Linux; nothing elsewhere). The
// advice is a hint: it never fails the caller.
void advise_huge_pages(void* block, std::size_t bytes);

// Advises the main heap's growth since the last call (glibc's brk heap; nothing elsewhere),
// including growth after a trim. Thread-safe; the first call only marks where the heap ends.
void advise_heap_growth();

}  // namespace meshsim
