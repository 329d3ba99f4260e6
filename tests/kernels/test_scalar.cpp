#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/scalar.hpp"
#include "tests/kernels/kernel_test_util.hpp"

using namespace meshsim::kernels;

namespace {

std::uint16_t bf16_bits(float f) {
  return bf16_from_float(f).bits;
}
std::uint16_t fp16_bits(float f) {
  return fp16_from_float(f).bits;
}
float from_bits(std::uint32_t b) {
  return std::bit_cast<float>(b);
}

bool is_nan_bf16(std::uint16_t b) {
  return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0;
}
bool is_nan_fp16(std::uint16_t b) {
  return (b & 0x7c00u) == 0x7c00u && (b & 0x3ffu) != 0;
}

// The correctly rounded (to nearest, ties to even) representable value among `sorted` finite
// values of a format, found by search: independent of the bit tricks in scalar.hpp. `even[i]`
// tells whether sorted[i]'s last significand bit is 0. Beyond the largest finite value x rounds
// to infinity when it is at least max + ulp(max)/2 (`overflow`).
double nearest(double x, const std::vector<double>& sorted, const std::vector<bool>& even,
               double overflow) {
  if (std::abs(x) >= overflow) return std::copysign(INFINITY, x);
  const auto it = std::lower_bound(sorted.begin(), sorted.end(), x);
  if (it == sorted.end()) return sorted.back();
  if (*it == x || it == sorted.begin()) return *it;
  const auto hi = static_cast<std::size_t>(it - sorted.begin());
  const double a = sorted[hi - 1], b = sorted[hi];
  if (x - a < b - x) return a;
  if (b - x < x - a) return b;
  return even[hi - 1] ? a : b;
}

struct FormatTable {
  std::vector<double> values;
  std::vector<bool> even;
};

// All finite values of a 16-bit format, sorted, from its decoder.
template <class Decode>
FormatTable finite_values(Decode decode, std::uint16_t exponent_mask) {
  std::vector<std::pair<double, bool>> v;
  for (std::uint32_t b = 0; b < 0x10000u; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    if ((bits & exponent_mask) == exponent_mask) continue;  // inf / NaN
    if (bits == 0x8000u) continue;                          // -0 duplicates +0
    v.emplace_back(static_cast<double>(decode(bits)), (bits & 1u) == 0);
  }
  std::sort(v.begin(), v.end());
  FormatTable t;
  for (const auto& [x, e] : v) {
    t.values.push_back(x);
    t.even.push_back(e);
  }
  return t;
}

}  // namespace

TEST_CASE("scalar_bytes and names") {
  CHECK(scalar_bytes(ScalarType::bf16) == 2);
  CHECK(scalar_bytes(ScalarType::fp16) == 2);
  CHECK(scalar_bytes(ScalarType::fp32) == 4);
  CHECK(scalar_bytes(ScalarType::fp64) == 8);
  CHECK(to_string(ScalarType::bf16) == "bf16");
  CHECK(to_string(ScalarType::fp64) == "fp64");
}

TEST_CASE("bf16: exact cases of round to nearest even") {
  CHECK(bf16_bits(1.0f) == 0x3f80);
  CHECK(bf16_bits(-2.0f) == 0xc000);
  CHECK(bf16_bits(0.0f) == 0x0000);
  CHECK(bf16_bits(-0.0f) == 0x8000);                   // the sign of zero survives
  CHECK(bf16_bits(from_bits(0x3f808000u)) == 0x3f80);  // 1 + 2^-8: a tie, to even (down)
  CHECK(bf16_bits(from_bits(0x3f818000u)) == 0x3f82);  // 1 + 3 * 2^-8: a tie, to even (up)
  CHECK(bf16_bits(from_bits(0x3f808001u)) == 0x3f81);  // just above the tie: up
  CHECK(bf16_bits(from_bits(0x3f807fffu)) == 0x3f80);  // just below the tie: down
  CHECK(bf16_bits(std::numeric_limits<float>::max()) == 0x7f80);  // rounds up to +inf
  CHECK(bf16_bits(from_bits(0x7f7f0000u)) == 0x7f7f);             // the largest bf16 itself
  CHECK(bf16_bits(INFINITY) == 0x7f80);
  CHECK(bf16_bits(-INFINITY) == 0xff80);
  CHECK(is_nan_bf16(bf16_bits(std::numeric_limits<float>::quiet_NaN())));
  CHECK(is_nan_bf16(bf16_bits(from_bits(0x7f800001u))));  // a NaN whose payload is in the low
                                                          // half stays NaN, not infinity
  CHECK(bf16_bits(from_bits(0x00018000u)) == 0x0002);     // subnormal tie 1.5 ulp -> 2 (even)
  CHECK(to_float(Bf16{0x3f80}) == 1.0f);
  CHECK(to_float(Bf16{0x0001}) == from_bits(0x00010000u));  // the smallest subnormal
}

TEST_CASE("bf16: every pattern round-trips through float32 exactly") {
  for (std::uint32_t b = 0; b < 0x10000u; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const std::uint16_t back = bf16_bits(to_float(Bf16{bits}));
    if (is_nan_bf16(bits)) {
      CHECK(is_nan_bf16(back));
    } else if (back != bits) {
      FAIL("bf16 pattern " << bits << " came back as " << back);
    }
  }
}

TEST_CASE("bf16: float32 and float64 inputs round to the nearest bf16 (search over all values)") {
  const FormatTable t = finite_values([](std::uint16_t b) { return to_float(Bf16{b}); }, 0x7f80u);
  // overflow threshold: largest bf16 (2^127 * (2 - 2^-7)) plus half an ulp (2^119)
  const double overflow = std::ldexp(2.0 - 0x1.0p-7, 127) + std::ldexp(1.0, 119);
  meshsim::kernels::test::Rng rng(7);
  for (int i = 0; i < 20000; ++i) {
    // random magnitudes across the whole exponent range, both signs
    const double x = std::ldexp(rng.uniform(1.0, 2.0), static_cast<int>(rng.uniform(-135, 128))) *
                     (rng.uniform() < 0 ? -1.0 : 1.0);
    const double want = nearest(x, t.values, t.even, overflow);
    CHECK(static_cast<double>(to_float(bf16_from_double(x))) == want);
    const float f = static_cast<float>(x);
    CHECK(static_cast<double>(to_float(bf16_from_float(f))) ==
          nearest(static_cast<double>(f), t.values, t.even, overflow));
  }
}

TEST_CASE("bf16 from float64 rounds once, not twice through float32") {
  // x = 1 + 2^-8 + 2^-40: just above the bf16 tie 1 + 2^-8. float32(x) drops 2^-40 and lands on
  // the tie, which would then round down to 1; the correct result is 1 + 2^-7 (0x3f81).
  const double x = 1.0 + 0x1.0p-8 + 0x1.0p-40;
  CHECK(bf16_from_float(static_cast<float>(x)).bits == 0x3f80);         // double rounding
  CHECK(bf16_from_double(x).bits == 0x3f81);                            // correct
  CHECK(fp16_from_double(1.0 + 0x1.0p-11 + 0x1.0p-40).bits == 0x3c01);  // same for fp16
  CHECK(bf16_from_double(1e300).bits == 0x7f80);    // beyond float32: still +inf
  CHECK(bf16_from_double(-1e-300).bits == 0x8000);  // underflow keeps the sign
}

TEST_CASE("fp16: exact cases") {
  CHECK(fp16_bits(1.0f) == 0x3c00);
  CHECK(fp16_bits(-2.0f) == 0xc000);
  CHECK(fp16_bits(65504.0f) == 0x7bff);               // the largest half
  CHECK(fp16_bits(65519.0f) == 0x7bff);               // below the midpoint to 2^16: down
  CHECK(fp16_bits(65520.0f) == 0x7c00);               // the midpoint: ties to even -> infinity
  CHECK(fp16_bits(0x1.0p-14f) == 0x0400);             // the smallest normal
  CHECK(fp16_bits(0x1.0p-24f) == 0x0001);             // the smallest subnormal
  CHECK(fp16_bits(0x1.0p-25f) == 0x0000);             // half of it: a tie, to even (zero)
  CHECK(fp16_bits(0x1.8p-25f) == 0x0001);             // 0.75 ulp: up
  CHECK(fp16_bits(0x1.8p-24f) == 0x0002);             // 1.5 ulp: a tie, to even (2)
  CHECK(fp16_bits(0x1.4p-24f) == 0x0001);             // 1.25 ulp: down
  CHECK(fp16_bits(1.0f + 0x1.0p-11f) == 0x3c00);      // tie between 1 and 1 + 2^-10: even
  CHECK(fp16_bits(1.0f + 3 * 0x1.0p-11f) == 0x3c02);  // tie: to even (up)
  CHECK(fp16_bits(0x1.ffcp-15f) == 0x0400);  // a subnormal that rounds up to the smallest normal
  CHECK(fp16_bits(-0.0f) == 0x8000);
  CHECK(is_nan_fp16(fp16_bits(std::numeric_limits<float>::quiet_NaN())));
  CHECK(fp16_bits(-INFINITY) == 0xfc00);
  CHECK(to_float(Fp16{0x0001}) == 0x1.0p-24f);
  CHECK(to_float(Fp16{0x7bff}) == 65504.0f);
  CHECK(std::isinf(to_float(Fp16{0x7c00})));
}

TEST_CASE("fp16: every pattern round-trips through float32 exactly") {
  for (std::uint32_t b = 0; b < 0x10000u; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const std::uint16_t back = fp16_bits(to_float(Fp16{bits}));
    if (is_nan_fp16(bits)) {
      CHECK(is_nan_fp16(back));
    } else if (back != bits) {
      FAIL("fp16 pattern " << bits << " came back as " << back);
    }
  }
}

TEST_CASE("fp16: float32 and float64 inputs round to the nearest half (search over all values)") {
  const FormatTable t = finite_values([](std::uint16_t b) { return to_float(Fp16{b}); }, 0x7c00u);
  const double overflow = 65520.0;  // 65504 + half an ulp (16)
  meshsim::kernels::test::Rng rng(11);
  for (int i = 0; i < 20000; ++i) {
    const double x = std::ldexp(rng.uniform(1.0, 2.0), static_cast<int>(rng.uniform(-27, 17))) *
                     (rng.uniform() < 0 ? -1.0 : 1.0);
    CHECK(static_cast<double>(to_float(fp16_from_double(x))) ==
          nearest(x, t.values, t.even, overflow));
    const float f = static_cast<float>(x);
    CHECK(static_cast<double>(to_float(fp16_from_float(f))) ==
          nearest(static_cast<double>(f), t.values, t.even, overflow));
  }
}
