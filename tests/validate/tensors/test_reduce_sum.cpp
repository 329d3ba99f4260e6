#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "kernels/scalar.hpp"
#include "validate/tensors/reduce_sum.hpp"

using namespace meshsim;

TEST_CASE("sum_into adds element-wise in fp32 and fp64") {
  std::vector<float> a{1, 2, 3}, b{10, 20, 30};
  sum_into(DType::fp32, reinterpret_cast<std::byte*>(a.data()),
           reinterpret_cast<const std::byte*>(b.data()), 3);
  CHECK(a == std::vector<float>{11, 22, 33});
  std::vector<double> c{0.5}, d{0.25};
  sum_into(DType::fp64, reinterpret_cast<std::byte*>(c.data()),
           reinterpret_cast<const std::byte*>(d.data()), 1);
  CHECK(c[0] == 0.75);
}

TEST_CASE("sum_into bf16 adds in float32 and rounds once per step") {
  // 256 + 1 = 257 needs 9 significand bits and bf16 has 8: the tie rounds to the even 256.
  using kernels::Bf16;
  using kernels::Fp16;
  std::vector<Bf16> a{kernels::bf16_from_float(256.0f)}, b{kernels::bf16_from_float(1.0f)};
  sum_into(DType::bf16, reinterpret_cast<std::byte*>(a.data()),
           reinterpret_cast<const std::byte*>(b.data()), 1);
  CHECK(kernels::to_float(a[0]) == 256.0f);
  std::vector<Fp16> c{kernels::fp16_from_float(1.5f)}, d{kernels::fp16_from_float(2.25f)};
  sum_into(DType::fp16, reinterpret_cast<std::byte*>(c.data()),
           reinterpret_cast<const std::byte*>(d.data()), 1);
  CHECK(kernels::to_float(c[0]) == 3.75f);
}
