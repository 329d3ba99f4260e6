#pragma once
// Helpers of the kernel tests: a deterministic random source, host buffers of any storage type
// readable as float64, and the error measure the tolerances are stated in.
//
// Error measure (the validate mode reports the same): max_i |got_i - want_i| / max_i |want_i|,
// the largest absolute error relative to the tensor's largest magnitude. Tolerances per storage
// type of the *outputs* (inputs are quantized to their storage type before the float64 reference
// sees them, so only the kernel's math and its final rounding count):
//   fp64 1e-12, fp32 1e-5, fp16 4e-3, bf16 1e-2 (bf16 keeps 8 significant bits: 2^-9 = 2e-3 per
//   rounding, and a few roundings can stack).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cpu/convert.hpp"
#include "kernels/views.hpp"

namespace meshsim::kernels::test {

inline double tolerance(ScalarType t) {
  switch (t) {
    case ScalarType::fp64:
      return 1e-12;
    case ScalarType::fp32:
      return 1e-5;
    case ScalarType::fp16:
      return 4e-3;
    case ScalarType::bf16:
      return 1e-2;
  }
  return 0.0;
}

// splitmix64: the same numbers on every platform and standard library.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi).
  double uniform(double lo = -1.0, double hi = 1.0) {
    return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1.0p-53;
  }

 private:
  std::uint64_t state_;
};

// A host buffer of n elements of a storage type (8-byte aligned).
class Buffer {
 public:
  Buffer(ScalarType type, std::int64_t size)
      : type_(type),
        size_(size),
        words_(static_cast<std::size_t>((size * scalar_bytes(type) + 7) / 8), 0) {}

  ScalarType type() const { return type_; }
  std::int64_t size() const { return size_; }
  void* data() { return words_.data(); }
  const void* data() const { return words_.data(); }
  VectorView vector() { return VectorView{data(), type_, size_}; }

  // The stored values as float64 (exact).
  std::vector<double> values() const {
    std::vector<double> out(static_cast<std::size_t>(size_));
    cpu::load(words_.data(), type_, size_, out.data());
    return out;
  }
  // Stores values rounded to the storage type.
  void set(std::span<const double> v) {
    cpu::store(v.data(), static_cast<std::int64_t>(v.size()), data(), type_);
  }
  void fill(double value) { cpu::fill(data(), type_, size_, value); }

 private:
  ScalarType type_;
  std::int64_t size_;
  std::vector<std::uint64_t> words_;
};

// A buffer of uniform random values in [lo, hi), rounded to its storage type.
inline Buffer random_buffer(ScalarType type, std::int64_t size, Rng& rng, double lo = -1.0,
                            double hi = 1.0) {
  std::vector<double> v(static_cast<std::size_t>(size));
  for (double& x : v) x = rng.uniform(lo, hi);
  Buffer b(type, size);
  b.set(v);
  return b;
}

inline double max_abs(std::span<const double> v) {
  double m = 0.0;
  for (double x : v) {
    if (std::isfinite(x)) m = std::max(m, std::abs(x));
  }
  return m;
}

// max |got - want| / max |want| over the finite values of want (absolute error when want is all
// zeros); NaN, or an infinity that is not matched exactly, gives infinity.
inline double max_rel_error(std::span<const double> got, std::span<const double> want) {
  if (got.size() != want.size()) return INFINITY;
  double err = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;  // equal, including equal infinities (an empty row's lse)
    const double e = std::abs(got[i] - want[i]);
    if (std::isnan(e)) return INFINITY;
    err = std::max(err, e);
  }
  const double scale = max_abs(want);
  return scale > 0.0 ? err / scale : err;
}

}  // namespace meshsim::kernels::test
