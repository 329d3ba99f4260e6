#pragma once
// The sharding flags `meshsim step` and `meshsim sweep` share: --zero 1|2|3, --fsdp, --hsdp R,
// --no-reshard-after-forward (schedules/sharding.hpp).
#include <vector>

#include "schedules/step_plan.hpp"
#include "tools/cli_args.hpp"

namespace meshsim {

std::vector<OptionSpec> sharding_options();

// Sets plan.sharding (and distributed_optimizer for any ZeRO stage) from the flags; InputError
// naming the flag when they contradict each other or --overlap-param-gather.
void read_sharding(const Args& args, StepPlan& plan);

}  // namespace meshsim
