#pragma once
// NumPy .npy files (format version 1.0): a little-endian float32 array ('<f4') for bf16, fp16 and
// fp32 data (bf16 and fp16 values are exact in float32) or float64 ('<f8') for fp64, C order.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/dtype.hpp"

namespace meshsim {

std::string npy_file(const std::vector<std::int64_t>& shape, const std::vector<double>& values,
                     DType dtype);

}  // namespace meshsim
