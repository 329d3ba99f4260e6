#pragma once
// Device-side loads and stores of any ScalarType through the shared conversions of
// kernels/scalar.hpp, and warp reductions. Included by the .cu files of kernels/cuda only.
#include <cstdint>

#include "kernels/scalar.hpp"

namespace meshsim::kernels::cuda::detail {

template <class M>
__device__ inline M load(const void* data, ScalarType type, std::int64_t i) {
  switch (type) {
    case ScalarType::bf16:
      return to_math<M>(static_cast<const Bf16*>(data)[i]);
    case ScalarType::fp16:
      return to_math<M>(static_cast<const Fp16*>(data)[i]);
    case ScalarType::fp32:
      return to_math<M>(static_cast<const float*>(data)[i]);
    case ScalarType::fp64:
      return to_math<M>(static_cast<const double*>(data)[i]);
  }
  return M(0);
}

template <class M>
__device__ inline void store(void* data, ScalarType type, std::int64_t i, M x) {
  switch (type) {
    case ScalarType::bf16:
      static_cast<Bf16*>(data)[i] = ScalarFrom<Bf16>::from(x);
      return;
    case ScalarType::fp16:
      static_cast<Fp16*>(data)[i] = ScalarFrom<Fp16>::from(x);
      return;
    case ScalarType::fp32:
      static_cast<float*>(data)[i] = ScalarFrom<float>::from(x);
      return;
    case ScalarType::fp64:
      static_cast<double*>(data)[i] = ScalarFrom<double>::from(x);
      return;
  }
}

template <class T>
__device__ inline T warp_sum(T x) {
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

template <class T>
__device__ inline T warp_max(T x) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const T y = __shfl_xor_sync(0xffffffffu, x, offset);
    x = y > x ? y : x;
  }
  return x;
}

// Blocks for n elements with a grid-stride loop (at most 4096 blocks of 256 threads).
inline unsigned grid_for(std::int64_t n, int threads = 256) {
  const std::int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 4096 ? 4096 : blocks));
}

inline bool any_fp64(ScalarType a, ScalarType b, ScalarType c = ScalarType::fp32,
                     ScalarType d = ScalarType::fp32) {
  return a == ScalarType::fp64 || b == ScalarType::fp64 || c == ScalarType::fp64 ||
         d == ScalarType::fp64;
}

}  // namespace meshsim::kernels::cuda::detail
