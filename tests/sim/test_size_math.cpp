#include <doctest/doctest.h>

#include <cstdint>
#include <limits>

#include "sim/size_math.hpp"

using meshsim::checked_product;
using meshsim::product_exceeds;

TEST_CASE("checked_product multiplies, and says so when int64 overflows") {
  CHECK(checked_product({}) == 1);
  CHECK(checked_product({3, 5, 7}) == 105);
  constexpr std::int64_t k2p40 = std::int64_t{1} << 40;  // 1099511627776
  // 2^40 x 2^22 = 2^62 fits; x 2 more is 2^63, one past INT64_MAX = 2^63 - 1.
  CHECK(checked_product({k2p40, std::int64_t{1} << 22}) == std::int64_t{1} << 62);
  CHECK_FALSE(checked_product({k2p40, std::int64_t{1} << 22, 2}).has_value());
  // The ring-attention repro: batch 2^40 x seq/cp 2^39 = 2^79 wraps in int64 arithmetic.
  CHECK_FALSE(checked_product({k2p40, k2p40 / 2}).has_value());
  CHECK(checked_product({std::numeric_limits<std::int64_t>::max(), 1}) ==
        std::numeric_limits<std::int64_t>::max());
}

TEST_CASE("product_exceeds compares with the limit without overflowing") {
  constexpr std::int64_t k2p40 = std::int64_t{1} << 40;
  CHECK_FALSE(product_exceeds({1024, 1024, 1024, 1024}, k2p40));  // exactly 2^40
  CHECK(product_exceeds({1024, 1024, 1024, 1025}, k2p40));
  CHECK(product_exceeds({k2p40, k2p40}, k2p40));  // 2^80: overflow counts as exceeding
  CHECK_FALSE(product_exceeds({0, k2p40, k2p40}, 0));
}
