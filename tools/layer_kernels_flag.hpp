#pragma once
// The --layer-kernels flag `meshsim step` and `meshsim sweep` share (schedules/layer_kernels.hpp).
#include "schedules/step_plan.hpp"
#include "tools/cli_args.hpp"

namespace meshsim {

OptionSpec layer_kernels_option();

// Sets plan.layer_kernels from --layer-kernels (fused when absent); InputError naming the flag
// and the choices for anything else.
void read_layer_kernels(const Args& args, StepPlan& plan);

}  // namespace meshsim
