#pragma once
// The built-in profile with the host issue clock off, for tests of what the device runs: their
// tiny models issue ops faster than a host could (13.48 us per op on Hopper) and would measure
// the host instead.
#include <string_view>

#include "sim/hardware_profile.hpp"

namespace meshsim::testing {

inline HardwareProfile device_hardware(std::string_view name = "h100-sxm") {
  HardwareProfile hw = load_hardware(name);
  hw.host_op = 0;
  return hw;
}

}  // namespace meshsim::testing
