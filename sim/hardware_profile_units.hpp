#pragma once
// The hardware profile's JSON units (TFLOP/s, GB, us) against the SI values HardwareProfile holds,
// shared by its reader (sim/hardware_profile.cpp) and writer (sim/hardware_profile_json.cpp).
#include <cmath>

#include "sim/dtype.hpp"

namespace meshsim::profile_units {

// A JSON field in human units and its SI value: si = human * mul (or human / div).
struct Unit {
  double mul = 1;
  double div = 1;
};
inline constexpr Unit kUnitOne{1, 1};
inline constexpr Unit kUnitTera{1e12, 1};  // TFLOP/s, TB/s
inline constexpr Unit kUnitGiga{1e9, 1};   // GB, GB/s
inline constexpr Unit kUnitMicro{1, 1e6};  // us

inline double from_human(double human, Unit u) {
  return u.mul != 1 ? human * u.mul : human / u.div;
}

// The human value whose conversion gives back exactly `si` when one exists near si / unit (always
// the case for profiles that were read from JSON), so that JSON round trips are exact.
inline double to_human(double si, Unit u) {
  const double h = u.mul != 1 ? si / u.mul : si * u.div;
  if (!std::isfinite(h) || from_human(h, u) == si) return h;
  double up = h, down = h;
  for (int i = 0; i < 8; ++i) {
    up = std::nextafter(up, HUGE_VAL);
    if (from_human(up, u) == si) return up;
    down = std::nextafter(down, -HUGE_VAL);
    if (from_human(down, u) == si) return down;
  }
  return h;
}

// The dtypes peak_tflops names (fp8 and fp4 are optional fields of their own).
inline constexpr DType kDTypes[] = {DType::bf16, DType::fp16, DType::fp32, DType::fp64};

}  // namespace meshsim::profile_units
