#pragma once
// Size products for input guards, computed without signed overflow: a guard such as
// "`batch` x `seq` x `heads` x `head_dim` must be at most 2^40" must hold for any input, including
// values whose product does not fit in int64.
#include <cstdint>
#include <initializer_list>
#include <optional>

namespace meshsim {

// The product of `factors`, or nullopt when it does not fit in int64.
inline std::optional<std::int64_t> checked_product(std::initializer_list<std::int64_t> factors) {
  std::int64_t product = 1;
  for (std::int64_t f : factors) {
    if (__builtin_mul_overflow(product, f, &product)) return std::nullopt;
  }
  return product;
}

// Whether the product of non-negative `factors` is greater than `limit` (true as well when it
// does not fit in int64).
inline bool product_exceeds(std::initializer_list<std::int64_t> factors, std::int64_t limit) {
  const std::optional<std::int64_t> p = checked_product(factors);
  return !p || *p > limit;
}

}  // namespace meshsim
