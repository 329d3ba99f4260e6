#include "validate/tensors/reduce_sum.hpp"

#include <cstring>

#include "kernels/scalar.hpp"

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

// Word: kernels::Bf16 or kernels::Fp16; From: its conversion from float (round to nearest even).
template <typename Word, Word (*From)(float)>
void sum_half(std::byte* inout, const std::byte* in, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) {
    Word a, b;
    const auto offset = static_cast<std::size_t>(i) * 2;
    std::memcpy(&a.bits, inout + offset, 2);
    std::memcpy(&b.bits, in + offset, 2);
    const Word sum = From(kernels::to_float(a) + kernels::to_float(b));
    std::memcpy(inout + offset, &sum.bits, 2);
  }
}

}  // namespace

void sum_into(DType dtype, std::byte* inout, const std::byte* in, std::int64_t count) {
  switch (dtype) {
    case DType::bf16:
      sum_half<kernels::Bf16, kernels::bf16_from_float>(inout, in, count);
      return;
    case DType::fp16:
      sum_half<kernels::Fp16, kernels::fp16_from_float>(inout, in, count);
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
