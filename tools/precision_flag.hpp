#pragma once
// The --precision flag `meshsim step` and `meshsim sweep` share (schedules/precision.hpp).
#include <string>

#include "schedules/step_plan.hpp"
#include "sim/hardware_profile.hpp"
#include "tools/cli_args.hpp"

namespace meshsim {

OptionSpec precision_option();

// Sets plan.precision from --precision (bf16 when absent); InputError naming the flag for an
// unknown name (with the list) or a profile without the recipe's tensor cores.
void read_precision(const Args& args, const HardwareProfile& hardware, StepPlan& plan);

// The step's text line naming the precision, its format and the peak its GEMMs run at ("" for
// bf16).
std::string precision_line(const StepPlan& plan, const HardwareProfile& hardware);

}  // namespace meshsim
