#pragma once
// MESHSIM_HD marks the small inline functions that hold the per-element math of the kernels
// (conversions, masking, online softmax, log-sum-exp merge, activations, Adam), so the CPU kernels
// and the CUDA kernels (.cu, later) share one definition. Under nvcc (or clang in CUDA mode) it
// expands to __host__ __device__, otherwise to nothing.
#if defined(__CUDACC__)
#define MESHSIM_HD __host__ __device__
#else
#define MESHSIM_HD
#endif
