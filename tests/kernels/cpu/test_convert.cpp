#include <doctest/doctest.h>

#include <initializer_list>

#include <vector>

#include "kernels/cpu/convert.hpp"
#include "tests/kernels/kernel_test_util.hpp"

using namespace meshsim::kernels;
using namespace meshsim::kernels::cpu;

TEST_CASE("math type: double when any operand is fp64") {
  CHECK_FALSE(math_in_double(ScalarType::bf16, ScalarType::fp32));
  CHECK(math_in_double(ScalarType::bf16, ScalarType::fp64, ScalarType::fp32));
}

TEST_CASE("load and store round-trip values representable in every type") {
  // 0.5, -1.25, 3, 1024 are exact in bf16, fp16, fp32 and fp64.
  const std::vector<double> v{0.5, -1.25, 3.0, 1024.0};
  for (ScalarType t : {ScalarType::bf16, ScalarType::fp16, ScalarType::fp32, ScalarType::fp64}) {
    test::Buffer b(t, 4);
    store(v.data(), 4, b.data(), t);
    std::vector<float> f(4);
    load(b.data(), t, 4, f.data());
    for (std::size_t i = 0; i < 4; ++i) CHECK(static_cast<double>(f[i]) == v[i]);
    CHECK(b.values() == v);
  }
}

TEST_CASE("store with accumulate rounds dst + src once") {
  // bf16: 1 + 2^-9 is not representable; 1 (stored) + 2^-9 (added) is a tie and stays 1, while
  // adding 3 * 2^-9 rounds up to 1 + 2^-7.
  test::Buffer b(ScalarType::bf16, 2);
  b.fill(1.0);
  const std::vector<float> add{0x1.0p-9f, 3 * 0x1.0p-9f};
  store(add.data(), 2, b.data(), ScalarType::bf16, Store::accumulate);
  CHECK(b.values() == std::vector<double>{1.0, 1.0 + 0x1.0p-7});
  test::Buffer d(ScalarType::fp64, 2);
  d.fill(1.0);
  const std::vector<double> addd{0x1.0p-40, -2.0};
  store(addd.data(), 2, d.data(), ScalarType::fp64, Store::accumulate);
  CHECK(d.values() == std::vector<double>{1.0 + 0x1.0p-40, -1.0});
}

TEST_CASE("convert between every pair of types rounds once to nearest even") {
  // Source values -> fp32 -> each target, compared with the scalar conversions of scalar.hpp.
  test::Rng rng(5);
  const std::vector<ScalarType> types{ScalarType::bf16, ScalarType::fp16, ScalarType::fp32,
                                      ScalarType::fp64};
  for (ScalarType from : types) {
    const test::Buffer src = test::random_buffer(from, 257, rng, -70000.0, 70000.0);
    const std::vector<double> values = src.values();
    for (ScalarType to : types) {
      test::Buffer dst(to, 257);
      convert(src.data(), from, dst.data(), to, 257);
      test::Buffer want(to, 257);
      want.set(values);  // store() from double: one rounding of the exact source value
      CHECK(dst.values() == want.values());
    }
  }
}

TEST_CASE("fill writes the rounded value") {
  test::Buffer b(ScalarType::fp16, 3);
  fill(b.data(), ScalarType::fp16, 3, 0.1);
  const double want = static_cast<double>(to_float(fp16_from_double(0.1)));
  CHECK(b.values() == std::vector<double>(3, want));
}
