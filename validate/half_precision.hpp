#pragma once
// 16-bit floating-point storage formats converted to and from float32 for arithmetic: bfloat16
// (the upper half of an IEEE binary32) and IEEE binary16. Both round to nearest, ties to even;
// NaN stays NaN. Used by the fills, the reductions of bf16/fp16 collectives and the dumps.
#include <bit>
#include <cstdint>

namespace meshsim {

inline float bf16_to_float(std::uint16_t h) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
}

inline std::uint16_t float_to_bf16(float f) {
  const auto u = std::bit_cast<std::uint32_t>(f);
  if ((u & 0x7fffffffU) > 0x7f800000U) return static_cast<std::uint16_t>((u >> 16) | 0x40U);
  const std::uint32_t rounding = 0x7fffU + ((u >> 16) & 1U);
  return static_cast<std::uint16_t>((u + rounding) >> 16);
}

inline float fp16_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000U) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fU;
  std::uint32_t mantissa = h & 0x3ffU;
  if (exponent == 0x1fU) return std::bit_cast<float>(sign | 0x7f800000U | (mantissa << 13));
  if (exponent != 0) return std::bit_cast<float>(sign | ((exponent + 112U) << 23) | (mantissa << 13));
  if (mantissa == 0) return std::bit_cast<float>(sign);
  // Subnormal: normalize.
  std::uint32_t e = 113;
  while ((mantissa & 0x400U) == 0) {
    mantissa <<= 1;
    --e;
  }
  return std::bit_cast<float>(sign | (e << 23) | ((mantissa & 0x3ffU) << 13));
}

inline std::uint16_t float_to_fp16(float f) {
  const auto u = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000U);
  const std::uint32_t abs = u & 0x7fffffffU;
  if (abs > 0x7f800000U) return static_cast<std::uint16_t>(sign | 0x7e00U);  // NaN
  if (abs >= 0x477ff000U) return static_cast<std::uint16_t>(sign | 0x7c00U);  // rounds to inf
  if (abs >= 0x38800000U) {  // normal half: rebias the exponent, round 13 bits away
    const std::uint32_t rebased = abs - 0x38000000U;
    const std::uint32_t rounded = rebased + 0xfffU + ((rebased >> 13) & 1U);
    return static_cast<std::uint16_t>(sign | (rounded >> 13));
  }
  if (abs < 0x33000000U) return sign;  // below half the smallest subnormal
  // Subnormal half: shift the full mantissa, round to nearest even.
  const std::uint32_t exponent = abs >> 23;
  const std::uint32_t mantissa = (abs & 0x7fffffU) | 0x800000U;
  const std::uint32_t shift = 126U - exponent;  // 14..24
  const std::uint32_t halfway = 1U << (shift - 1);
  const std::uint32_t remainder = mantissa & ((1U << shift) - 1U);
  std::uint32_t result = mantissa >> shift;
  if (remainder > halfway || (remainder == halfway && (result & 1U) != 0)) ++result;
  return static_cast<std::uint16_t>(sign | result);
}

}  // namespace meshsim
