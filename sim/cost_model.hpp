#pragma once
// Assigns every op, transfer and collective instance of a Program its duration on a hardware
// profile with the analytical network model.
#include "sim/comm_plan.hpp"
#include "sim/engine.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/program.hpp"

namespace meshsim {

Durations estimate_durations(const Program& program, const CommPlan& plan,
                             const HardwareProfile& hw);

}  // namespace meshsim
