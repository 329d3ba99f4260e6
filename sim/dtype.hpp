#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace meshsim {

enum class DType : std::uint8_t { bf16, fp16, fp32, fp64 };

constexpr std::int64_t dtype_bytes(DType t) {
  switch (t) {
    case DType::bf16:
    case DType::fp16:
      return 2;
    case DType::fp32:
      return 4;
    case DType::fp64:
      return 8;
  }
  return 0;
}

// The type kernels accumulate in for operands stored in t (fp32 accumulators, main grads and
// softmax statistics; fp64 for fp64 runs).
constexpr DType accumulator_dtype(DType t) {
  return t == DType::fp64 ? DType::fp64 : DType::fp32;
}

std::string_view to_string(DType t);
std::optional<DType> parse_dtype(std::string_view name);

}  // namespace meshsim
