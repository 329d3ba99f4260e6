#include "validate/reduce_sum.hpp"

#include <cstring>

#include "validate/half_precision.hpp"

namespace meshsim {
namespace {

template <typename T>
void sum_native(std::byte* inout, const std::byte* in, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) {
    T a, b;
    const auto offset = static_cast<std::size_t>(i) * sizeof(T);
    std::memcpy(&a, inout + offset, sizeof(T));
    std::memcpy(&b, in + offset, sizeof(T));
    a += b;
    std::memcpy(inout + offset, &a, sizeof(T));
  }
}

template <float (*ToFloat)(std::uint16_t), std::uint16_t (*FromFloat)(float)>
void sum_half(std::byte* inout, const std::byte* in, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) {
    std::uint16_t a, b;
    const auto offset = static_cast<std::size_t>(i) * 2;
    std::memcpy(&a, inout + offset, 2);
    std::memcpy(&b, in + offset, 2);
    const std::uint16_t sum = FromFloat(ToFloat(a) + ToFloat(b));
    std::memcpy(inout + offset, &sum, 2);
  }
}

}  // namespace

void sum_into(DType dtype, std::byte* inout, const std::byte* in, std::int64_t count) {
  switch (dtype) {
    case DType::bf16:
      sum_half<bf16_to_float, float_to_bf16>(inout, in, count);
      return;
    case DType::fp16:
      sum_half<fp16_to_float, float_to_fp16>(inout, in, count);
      return;
    case DType::fp32:
      sum_native<float>(inout, in, count);
      return;
    case DType::fp64:
      sum_native<double>(inout, in, count);
      return;
  }
}

}  // namespace meshsim
