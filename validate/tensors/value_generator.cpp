#include "validate/tensors/value_generator.hpp"

#include <cstring>

#include "kernels/scalar.hpp"

namespace meshsim {
namespace {

constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

std::uint64_t splitmix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

}  // namespace

std::uint64_t name_hash(std::string_view name) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

ValueGenerator::ValueGenerator(std::uint64_t seed, std::string_view tensor, double scale)
    : key_(splitmix64(splitmix64(seed + kGolden) ^ name_hash(tensor))), scale_(scale) {}

double ValueGenerator::raw(std::int64_t index) const {
  const std::uint64_t bits = splitmix64(key_ + static_cast<std::uint64_t>(index) * kGolden);
  const double u = static_cast<double>(bits >> 11) * 0x1.0p-53;
  return scale_ * (2.0 * u - 1.0);
}

double ValueGenerator::round_to(DType dtype, double value) {
  switch (dtype) {
    case DType::bf16:
      return kernels::to_float(kernels::bf16_from_double(value));
    case DType::fp16:
      return kernels::to_float(kernels::fp16_from_double(value));
    case DType::fp32:
      return static_cast<float>(value);
    case DType::fp64:
      return value;
  }
  return value;
}

void store_element(DType dtype, std::byte* buffer, std::int64_t index, double value) {
  const auto i = static_cast<std::size_t>(index);
  switch (dtype) {
    case DType::bf16: {
      const kernels::Bf16 h = kernels::bf16_from_double(value);
      std::memcpy(buffer + 2 * i, &h.bits, 2);
      return;
    }
    case DType::fp16: {
      const kernels::Fp16 h = kernels::fp16_from_double(value);
      std::memcpy(buffer + 2 * i, &h.bits, 2);
      return;
    }
    case DType::fp32: {
      const auto f = static_cast<float>(value);
      std::memcpy(buffer + 4 * i, &f, 4);
      return;
    }
    case DType::fp64:
      std::memcpy(buffer + 8 * i, &value, 8);
      return;
  }
}

double load_element(DType dtype, const std::byte* buffer, std::int64_t index) {
  const auto i = static_cast<std::size_t>(index);
  switch (dtype) {
    case DType::bf16: {
      kernels::Bf16 h;
      std::memcpy(&h.bits, buffer + 2 * i, 2);
      return kernels::to_float(h);
    }
    case DType::fp16: {
      kernels::Fp16 h;
      std::memcpy(&h.bits, buffer + 2 * i, 2);
      return kernels::to_float(h);
    }
    case DType::fp32: {
      float f;
      std::memcpy(&f, buffer + 4 * i, 4);
      return f;
    }
    case DType::fp64: {
      double d;
      std::memcpy(&d, buffer + 8 * i, 8);
      return d;
    }
  }
  return 0;
}

}  // namespace meshsim
