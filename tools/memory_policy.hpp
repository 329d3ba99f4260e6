#pragma once
// How meshsim's processes use the allocator. glibc returns every freed block above its mmap
// threshold (128 KiB, growing to 32 MiB) to the system, so the next allocation of that size
// faults its pages in again: in a virtual machine a 1024^3 bf16 GEMM's converted operands cost
// more in page faults than in arithmetic (49 ms against 23 ms). keep_freed_memory() keeps freed
// memory for reuse instead; the resident peak may grow by what is kept (`meshsim step` of the
// 4,096-GPU benchmark plan: 373 -> 616 MB). Called first thing by meshsim and the benchmark
// programs.
namespace meshsim {

void keep_freed_memory();

}  // namespace meshsim
