#pragma once
// Which generated cases a sweep-style test simulates. The dev build's tests simulate every case.
// Under the sanitizers (the asan preset defines MESHSIM_SANITIZED) code runs 20-50x slower, and
// the flow and folding tests' hundreds of unfolded step simulations took most of that preset's
// test time: there they simulate every kSampleStride-th case, which still reaches every code path
// the sanitizers watch (plans differ in sizes, not in the code they run). Counts of generated cases
// stay exact in both builds: only the simulation is sampled.

namespace meshsim::test {

#ifdef MESHSIM_SANITIZED
inline constexpr int kSampleStride = 8;
#else
inline constexpr int kSampleStride = 1;
#endif

// Whether the n-th case (counting from 0) is simulated in this build.
constexpr bool simulated_case(int n) {
  return n % kSampleStride == 0;
}

}  // namespace meshsim::test
