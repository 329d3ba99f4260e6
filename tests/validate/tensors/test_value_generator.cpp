#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "validate/tensors/value_generator.hpp"

using namespace meshsim;

TEST_CASE("values depend only on (seed, tensor, index) and stay in [-scale, scale)") {
  const ValueGenerator a(7, "q"), b(7, "q"), other_seed(8, "q"), other_name(7, "k");
  int differ_seed = 0, differ_name = 0;
  for (std::int64_t i = 0; i < 1000; ++i) {
    CHECK(a.raw(i) == b.raw(i));
    CHECK(a.raw(i) >= -1.0);
    CHECK(a.raw(i) < 1.0);
    differ_seed += a.raw(i) != other_seed.raw(i) ? 1 : 0;
    differ_name += a.raw(i) != other_name.raw(i) ? 1 : 0;
  }
  CHECK(differ_seed == 1000);
  CHECK(differ_name == 1000);
  // Counter-based: element i does not depend on which elements were asked for before.
  CHECK(ValueGenerator(7, "q").raw(999) == a.raw(999));
  const ValueGenerator scaled(7, "q", 0.125);
  CHECK(scaled.raw(3) == doctest::Approx(a.raw(3) * 0.125));
}

TEST_CASE("mean and spread of uniform values") {
  const ValueGenerator g(1, "x");
  double sum = 0, sq = 0;
  constexpr int kN = 100000;
  for (int i = 0; i < kN; ++i) {
    sum += g.raw(i);
    sq += g.raw(i) * g.raw(i);
  }
  CHECK(std::abs(sum / kN) < 0.01);                          // mean 0
  CHECK(sq / kN == doctest::Approx(1.0 / 3).epsilon(0.01));  // variance of U(-1, 1) = 1/3
}

TEST_CASE("store_element rounds to the storage type; stored() predicts it") {
  const ValueGenerator g(3, "w");
  for (DType t : {DType::bf16, DType::fp16, DType::fp32, DType::fp64}) {
    std::vector<std::byte> buf(static_cast<std::size_t>(16 * dtype_bytes(t)));
    for (std::int64_t i = 0; i < 16; ++i) store_element(t, buf.data(), i, g.raw(i));
    for (std::int64_t i = 0; i < 16; ++i) CHECK(load_element(t, buf.data(), i) == g.stored(i, t));
  }
  CHECK(ValueGenerator::round_to(DType::bf16, 1.0 + 1.0 / 512) == 1.0);
  CHECK(ValueGenerator::round_to(DType::fp64, 0.1) == 0.1);
}
