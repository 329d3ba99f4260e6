// meshsim's global operator new: glibc's malloc, with the memory it hands out advised for
// transparent huge pages (tools/memory_policy.hpp): the heap's growth since the last call, and
// any block of kHugePageAdviceBytes or more (a block mapped apart from the heap, or in a worker
// thread's arena). Linked into the meshsim executable and the step benchmark only; under
// AddressSanitizer the sanitizer's own operator new stays in place. operator new[] and the
// nothrow forms forward here (libstdc++); operator delete is defined here too, as free(), so the
// pair is visibly ours to tools that watch libstdc++'s. The aligned forms (std::align_val_t) stay
// libstdc++'s and are not advised.
#include <cstdlib>
#include <new>

#include "tools/memory_policy.hpp"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MESHSIM_SANITIZED_NEW 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define MESHSIM_SANITIZED_NEW 1
#endif

#if !defined(MESHSIM_SANITIZED_NEW)
void* operator new(std::size_t bytes) {
  const std::size_t size = bytes == 0 ? 1 : bytes;
  for (;;) {
    if (void* block = std::malloc(size)) {
      meshsim::advise_heap_growth();
      if (size >= meshsim::kHugePageAdviceBytes) meshsim::advise_huge_pages(block, size);
      return block;
    }
    const std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

void operator delete(void* block) noexcept {
  std::free(block);
}
void operator delete(void* block, std::size_t /*bytes*/) noexcept {
  std::free(block);
}
#endif
