#include <doctest/doctest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tools/memory_policy.hpp"

using namespace meshsim;

namespace {

// The transparent huge page mode for 2 MiB pages: "always", "madvise" or "never" (the bracketed
// word; a per-size setting other than "inherit" wins), or "" when this process cannot have them
// (no THP in the kernel, or disabled for the process: THP_enabled 0 in /proc/self/status).
std::string bracketed(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  const auto open = line.find('['), close = line.find(']');
  return open == std::string::npos || close == std::string::npos
             ? std::string()
             : line.substr(open + 1, close - open - 1);
}
std::string thp_mode() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("THP_enabled:", 0) == 0 && line.find('0') != std::string::npos) return "";
  }
  const std::string size =
      bracketed("/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled");
  if (!size.empty() && size != "inherit") return size;
  return bracketed("/sys/kernel/mm/transparent_hugepage/enabled");
}

// THPeligible of the mapping holding `address` in /proc/self/smaps: 1 when the kernel may back it
// with huge pages (mode "always", or "madvise" and the range advised), 0 otherwise; -1 if absent.
int thp_eligible(std::uintptr_t address) {
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    std::uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= address && address < end;
    } else if (inside && line.rfind("THPeligible:", 0) == 0) {
      return std::stoi(line.substr(12));
    }
  }
  return -1;
}

}  // namespace

TEST_CASE("memory policy: the whole 2 MiB pages inside a block") {
  // 0x200001 + 8 MiB ends at 0xa00001: pages 0x400000 .. 0xa00000, three of them.
  HugePageRange r = huge_page_range(0x200001, std::size_t{8} << 20);
  CHECK(r.begin == 0x400000);
  CHECK(r.end == 0xa00000);
  // An aligned block one byte short of a page holds no whole page.
  r = huge_page_range(0x400000, kHugePageBytes - 1);
  CHECK(r.end <= r.begin);
  r = huge_page_range(0x400000, kHugePageBytes);
  CHECK(r.end - r.begin == kHugePageBytes);
}

TEST_CASE("memory policy: an advised range may be backed by huge pages") {
  const std::string mode = thp_mode();
  if (mode.empty()) return;  // no transparent huge pages in this kernel: nothing to advise
  const std::size_t bytes = std::size_t{16} << 20;
  void* block = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(block != MAP_FAILED);
  const HugePageRange r = huge_page_range(reinterpret_cast<std::uintptr_t>(block), bytes);
  REQUIRE(r.end > r.begin);
  if (mode == "madvise") CHECK(thp_eligible(r.begin) == 0);
  advise_huge_pages(block, bytes);
  CHECK(thp_eligible(r.begin) == (mode == "never" ? 0 : 1));
  munmap(block, bytes);
}

TEST_CASE("memory policy: the heap's growth is advised") {
  const std::string mode = thp_mode();
  if (mode.empty()) return;
  keep_freed_memory();   // large blocks from the heap, which grows in kHeapGrowthBytes steps
  advise_heap_growth();  // marks (or advises) the heap as it is
  const auto heap_end = reinterpret_cast<std::uintptr_t>(sbrk(0));
  const std::size_t bytes = kHeapGrowthBytes + (std::size_t{32} << 20);  // more than the step
  void* block = std::malloc(bytes);
  REQUIRE(block != nullptr);
  const std::uintptr_t last_page =
      huge_page_range(reinterpret_cast<std::uintptr_t>(block), bytes).end - kHugePageBytes;
  // Only a block the heap grew for is new memory (a sanitizer's allocator maps its blocks apart
  // from the heap, and a free block of that size leaves the heap as it was).
  const auto grown = reinterpret_cast<std::uintptr_t>(sbrk(0));
  if (last_page >= heap_end && last_page + kHugePageBytes <= grown) {
    if (mode == "madvise") CHECK(thp_eligible(last_page) == 0);
    advise_heap_growth();
    CHECK(thp_eligible(last_page) == (mode == "never" ? 0 : 1));
  }
  std::free(block);
}

TEST_CASE("memory policy: the heap's growth after a trim is advised again") {
  const std::string mode = thp_mode();
  if (mode.empty()) return;
  keep_freed_memory();  // glibc trims a free top above 1 GiB
  advise_heap_growth();
  const auto start = reinterpret_cast<std::uintptr_t>(sbrk(0));
  const std::size_t bytes = std::size_t{640} << 20;  // two of them: 1.25 GiB, each under 1 GiB
  void* first = std::malloc(bytes);
  void* second = std::malloc(bytes);
  REQUIRE(first != nullptr);
  REQUIRE(second != nullptr);
  const auto grown = reinterpret_cast<std::uintptr_t>(sbrk(0));
  advise_heap_growth();
  std::free(second);
  std::free(first);
  const auto trimmed = reinterpret_cast<std::uintptr_t>(sbrk(0));
  advise_heap_growth();  // the mark follows the break down
  void* again = std::malloc(bytes);
  REQUIRE(again != nullptr);
  const std::uintptr_t last_page =
      huge_page_range(reinterpret_cast<std::uintptr_t>(again), bytes).end - kHugePageBytes;
  const auto regrown = reinterpret_cast<std::uintptr_t>(sbrk(0));
  // Only when the heap grew, was trimmed and grew again for the block (not under a sanitizer).
  if (grown >= start + 2 * bytes && trimmed < grown && last_page >= trimmed &&
      last_page + kHugePageBytes <= regrown) {
    advise_heap_growth();
    CHECK(thp_eligible(last_page) == (mode == "never" ? 0 : 1));
  } else {
    MESSAGE("the heap did not grow, shrink and grow again here: nothing checked");
  }
  std::free(again);
}
