#pragma once
// Simulated time: integer nanoseconds. No floating-point time comparisons anywhere in the engine.
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

namespace meshsim {

using Nanos = std::int64_t;

// The longest duration one op may take: 1e9 s (about 32 years) is 1e18 ns, below the 9.2e18 ns
// int64 holds, so a step's sum of a few such durations cannot overflow either.
inline constexpr double kMaxDurationSeconds = 1e9;

// Throws InputError: "<what> takes <seconds> s, outside the simulated range [0, 1e9] s".
[[noreturn]] void duration_out_of_range(double seconds, std::string_view what);

// Converts seconds to the nearest nanosecond (durations from cost models and CLI flags).
// `describe()` names the input the duration came from (a flag, a profile field and its value); it
// is called only when the duration is not finite, negative or beyond kMaxDurationSeconds.
template <class Describe>
Nanos seconds_to_ns(double seconds, Describe&& describe) {
  if (!(seconds >= 0 && seconds <= kMaxDurationSeconds)) {
    duration_out_of_range(seconds, std::string(describe()));
  }
  return static_cast<Nanos>(std::llround(seconds * 1e9));
}
inline double ns_to_seconds(Nanos ns) {
  return static_cast<double>(ns) * 1e-9;
}

}  // namespace meshsim
