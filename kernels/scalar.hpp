#pragma once
// Element types of the kernels and the conversions between them. bf16 and fp16 are storage
// formats: the kernels convert them to float32 (or float64) for the math and round back on store.
//
// Every conversion rounds to nearest, ties to even (IEEE 754's default), keeps the sign of zero,
// maps overflow to infinity and keeps NaN a (quiet) NaN. float64 -> bf16/fp16 rounds once
// (through float32 rounded to odd, which has enough extra bits to make the second rounding exact),
// not twice.
#include <cstdint>
#include <cstring>
#include <string_view>

#include "kernels/host_device.hpp"

namespace meshsim::kernels {

// The same enumerators in the same order as meshsim::DType (sim/dtype.hpp), so an executor may
// convert with a static_cast; kernels/ does not include sim/.
enum class ScalarType : std::uint8_t { bf16, fp16, fp32, fp64 };

constexpr std::int64_t scalar_bytes(ScalarType t) {
  switch (t) {
    case ScalarType::bf16:
    case ScalarType::fp16:
      return 2;
    case ScalarType::fp32:
      return 4;
    case ScalarType::fp64:
      return 8;
  }
  return 0;
}

std::string_view to_string(ScalarType t);

// Storage words. A distinct type each, so a bf16 buffer cannot be read as fp16 by accident.
struct Bf16 {
  std::uint16_t bits = 0;
};
struct Fp16 {
  std::uint16_t bits = 0;
};

namespace detail {

template <class To, class From>
MESHSIM_HD inline To bit_copy(const From& from) {
  static_assert(sizeof(To) == sizeof(From));
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
}

// float64 -> float32 rounded to odd: truncate toward zero, then set the last bit if inexact.
// Rounding the result once more to a format with at most 22 significand bits gives the correctly
// rounded value of the float64 input.
MESHSIM_HD inline float round_to_odd_float(double x) {
  float f = static_cast<float>(x);  // to nearest
  if (x != x || static_cast<double>(f) == x) return f;
  std::uint32_t bits = bit_copy<std::uint32_t>(f);
  const double back = static_cast<double>(f);
  // Rounded away from zero (to infinity, too): step back one ulp toward zero. The result is
  // never infinite, and a float64 beyond the largest float still overflows the narrower format.
  if ((back > x && x > 0) || (back < x && x < 0)) --bits;
  return bit_copy<float>(bits | 1u);
}

}  // namespace detail

MESHSIM_HD inline float to_float(Bf16 x) {
  return detail::bit_copy<float>(static_cast<std::uint32_t>(x.bits) << 16);
}

// bf16 is the upper half of float32: add 0x7fff plus the lowest kept bit, then truncate.
MESHSIM_HD inline Bf16 bf16_from_float(float f) {
  const std::uint32_t bits = detail::bit_copy<std::uint32_t>(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    return Bf16{static_cast<std::uint16_t>((bits >> 16) | 0x0040u)};  // NaN stays a quiet NaN
  }
  const std::uint32_t lsb = (bits >> 16) & 1u;
  return Bf16{static_cast<std::uint16_t>((bits + 0x7fffu + lsb) >> 16)};
}

MESHSIM_HD inline Bf16 bf16_from_double(double x) {
  return bf16_from_float(detail::round_to_odd_float(x));
}

MESHSIM_HD inline float to_float(Fp16 x) {
  const std::uint32_t sign = static_cast<std::uint32_t>(x.bits & 0x8000u) << 16;
  const std::uint32_t exponent = (x.bits >> 10) & 0x1fu;
  const std::uint32_t mantissa = x.bits & 0x3ffu;
  if (exponent == 0) {
    // zero or subnormal: mantissa * 2^-24, exact in float32
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exponent == 31) {
    return detail::bit_copy<float>(sign | 0x7f800000u | (mantissa << 13));  // inf or NaN
  }
  return detail::bit_copy<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

MESHSIM_HD inline Fp16 fp16_from_float(float f) {
  const std::uint32_t bits = detail::bit_copy<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return Fp16{static_cast<std::uint16_t>(sign | 0x7e00u)};  // NaN
  // 65520 = halfway between 65504 (the largest half) and 2^16: ties to even go up, to infinity
  if (magnitude >= 0x477ff000u) return Fp16{static_cast<std::uint16_t>(sign | 0x7c00u)};
  if (magnitude >= 0x38800000u) {
    // normal half (>= 2^-14): rebias the exponent by 127 - 15 and round away 13 mantissa bits
    const std::uint32_t rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
    return Fp16{static_cast<std::uint16_t>(sign | ((rounded - 0x38000000u) >> 13))};
  }
  if (magnitude <= 0x33000000u) return Fp16{sign};  // <= 2^-25: ties to even give zero
  // subnormal half: value / 2^-24 = significand * 2^(exponent - 126), shifted right 14..24 bits
  const std::uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
  const std::uint32_t shift = 126u - (magnitude >> 23);
  const std::uint32_t rest = significand & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1u);
  std::uint32_t q = significand >> shift;
  if (rest > half || (rest == half && (q & 1u) != 0)) ++q;
  return Fp16{static_cast<std::uint16_t>(sign | q)};
}

MESHSIM_HD inline Fp16 fp16_from_double(double x) {
  return fp16_from_float(detail::round_to_odd_float(x));
}

// Store-side conversion by target type: ScalarFrom<T>::from(float or double).
template <class T>
struct ScalarFrom;
template <>
struct ScalarFrom<float> {
  MESHSIM_HD static float from(float x) { return x; }
  MESHSIM_HD static float from(double x) { return static_cast<float>(x); }
};
template <>
struct ScalarFrom<double> {
  MESHSIM_HD static double from(float x) { return x; }
  MESHSIM_HD static double from(double x) { return x; }
};
template <>
struct ScalarFrom<Bf16> {
  MESHSIM_HD static Bf16 from(float x) { return bf16_from_float(x); }
  MESHSIM_HD static Bf16 from(double x) { return bf16_from_double(x); }
};
template <>
struct ScalarFrom<Fp16> {
  MESHSIM_HD static Fp16 from(float x) { return fp16_from_float(x); }
  MESHSIM_HD static Fp16 from(double x) { return fp16_from_double(x); }
};

// Load-side conversion to the math type M (float or double).
template <class M>
MESHSIM_HD inline M to_math(float x) {
  return static_cast<M>(x);
}
template <class M>
MESHSIM_HD inline M to_math(double x) {
  return static_cast<M>(x);
}
template <class M>
MESHSIM_HD inline M to_math(Bf16 x) {
  return static_cast<M>(to_float(x));
}
template <class M>
MESHSIM_HD inline M to_math(Fp16 x) {
  return static_cast<M>(to_float(x));
}

}  // namespace meshsim::kernels
