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

// FSDP2 as --fsdp / --hsdp R / --no-reshard-after-forward state it: ZeRO-3 with FSDP2's mixed
// precision, replicated over `replicate` ranks.
ShardingPlan fsdp_sharding(int replicate, bool reshard_after_forward);

// plan.sharding = s; every ZeRO stage shards the optimizer state, so it turns on the
// distributed optimizer (what the flags above do; `meshsim compare` maps a row's fields the same
// way).
void apply_sharding(StepPlan& plan, const ShardingPlan& s);

}  // namespace meshsim
