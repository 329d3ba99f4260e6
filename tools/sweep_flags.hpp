#pragma once
// The flags of `meshsim sweep` (tools/cmd_sweep.cpp): their option specs and the plan lists they
// describe (the cluster size, the tp, pp, cp, vp, mbs, schedule, CP-variant, recompute, sharding
// and precision lists, and the settings every plan shares).
#include <string>
#include <type_traits>
#include <vector>

#include "schedules/plan_space.hpp"
#include "sim/hardware_profile.hpp"
#include "tools/cli_args.hpp"

namespace meshsim {

std::vector<OptionSpec> sweep_options();

// The plan lists of the flags; InputError naming the flag at fault.
PlanLists sweep_plan_lists(const Args& args, const HardwareProfile& hw);

// A default list as its flag's text: "1,2,4,8", "1f1b,interleaved,zb-h1".
template <class T>
std::string list_text(const std::vector<T>& values) {
  std::string out;
  for (const auto& v : values) {
    if (!out.empty()) out += ',';
    if constexpr (std::is_enum_v<T> || std::is_same_v<T, ShardingChoice>) {
      out += to_string(v);
    } else {
      out += std::to_string(v);
    }
  }
  return out;
}

}  // namespace meshsim
