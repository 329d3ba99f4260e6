#pragma once
// Element-wise sum of one buffer into another in a Program's data type: the reduction of the
// all-reduce and reduce-scatter collectives, shared by every communication backend so that they
// round alike. bf16 and fp16 add in float32 and round the result back to 16 bits (round to
// nearest even, kernels/scalar.hpp's conversions) at every pairwise step, as NCCL does; fp32 and
// fp64 add natively.
#include <cstddef>
#include <cstdint>

#include "sim/dtype.hpp"

namespace meshsim {

// inout[i] += in[i] for `count` elements of type `dtype`.
void sum_into(DType dtype, std::byte* inout, const std::byte* in, std::int64_t count);

}  // namespace meshsim
