#pragma once
// The --cross-entropy flag `meshsim step` and `meshsim sweep` share (schedules/cross_entropy.hpp).
#include "schedules/step_plan.hpp"
#include "tools/cli_args.hpp"

namespace meshsim {

OptionSpec cross_entropy_option();

// Sets plan.cross_entropy from --cross-entropy (vocab-parallel when absent); InputError naming
// the flag and the choices for anything else.
void read_cross_entropy(const Args& args, StepPlan& plan);

}  // namespace meshsim
