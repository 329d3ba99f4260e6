#pragma once
// Bulk conversions between storage types and the math types (float, double): the load/store
// steps every CPU kernel uses around its math, and the element loop of the copy kernel.
#include <cstdint>

#include "kernels/scalar.hpp"

namespace meshsim::kernels::cpu {

// How a kernel writes a result: dst = value, or dst = dst + value (rounded once to dst's type).
enum class Store : std::uint8_t { overwrite, accumulate };

// The math type of a kernel over these operands: double when any is fp64, else float.
constexpr bool math_in_double(ScalarType a) {
  return a == ScalarType::fp64;
}
template <class... Rest>
constexpr bool math_in_double(ScalarType a, Rest... rest) {
  return a == ScalarType::fp64 || math_in_double(rest...);
}

// dst[i] = src[i] converted from type t, i < n.
void load(const void* src, ScalarType t, std::int64_t n, float* dst);
void load(const void* src, ScalarType t, std::int64_t n, double* dst);

// dst[i] (+)= src[i], rounded to nearest even into type t, i < n.
void store(const float* src, std::int64_t n, void* dst, ScalarType t,
           Store mode = Store::overwrite);
void store(const double* src, std::int64_t n, void* dst, ScalarType t,
           Store mode = Store::overwrite);

// dst[i] = src[i] converted from src_type to dst_type with one rounding, i < n (may not overlap
// unless src == dst with equal types).
void convert(const void* src, ScalarType src_type, void* dst, ScalarType dst_type, std::int64_t n);

// dst[i] = value, i < n.
void fill(void* dst, ScalarType t, std::int64_t n, double value);

}  // namespace meshsim::kernels::cpu
