#include "tools/memory_policy.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace meshsim {

void keep_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

}  // namespace meshsim
