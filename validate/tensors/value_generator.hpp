#pragma once
// Deterministic tensor contents from a seed. The generator is counter-based: element i of a named
// global tensor is a pure function of (seed, tensor name, i), so a rank's shard of a sharded
// tensor holds exactly the elements of the unsharded tensor at the same global positions — what a
// one-rank reference needs to compare with — no matter how many ranks or in which order they fill.
//
// value(i) = scale * (2u - 1), u in [0, 1) from the SplitMix64 finalizer of a per-tensor key plus
// i times the golden-ratio increment, then rounded once to the storage type with kernels/'s
// conversions (the stored value is what both the executor and the reference see).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sim/dtype.hpp"

namespace meshsim {

class ValueGenerator {
 public:
  ValueGenerator(std::uint64_t seed, std::string_view tensor, double scale = 1.0);

  // The unrounded value of element `index`, uniform in [-scale, scale).
  double raw(std::int64_t index) const;
  // The value as stored in `dtype` (exactly representable in it).
  double stored(std::int64_t index, DType dtype) const { return round_to(dtype, raw(index)); }

  static double round_to(DType dtype, double value);

 private:
  std::uint64_t key_;
  double scale_;
};

// 64-bit FNV-1a of a name (the per-tensor part of the key).
std::uint64_t name_hash(std::string_view name);

// Writes `value` (rounded to `dtype`) as element `index` of a buffer of `dtype` elements.
void store_element(DType dtype, std::byte* buffer, std::int64_t index, double value);
// Reads element `index` of a buffer of `dtype` elements, widened to double.
double load_element(DType dtype, const std::byte* buffer, std::int64_t index);

}  // namespace meshsim
