#pragma once
// Simulated time: integer nanoseconds. No floating-point time comparisons anywhere in the engine.
#include <cmath>
#include <cstdint>

namespace meshsim {

using Nanos = std::int64_t;

// Converts seconds to the nearest nanosecond (durations from cost models and CLI flags).
inline Nanos seconds_to_ns(double seconds) {
  return static_cast<Nanos>(std::llround(seconds * 1e9));
}
inline double ns_to_seconds(Nanos ns) {
  return static_cast<double>(ns) * 1e-9;
}

}  // namespace meshsim
