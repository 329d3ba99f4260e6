#pragma once
// The expert-parallel flags of meshsim step (and their JSON): --ep, --etp,
// --moe-token-dispatcher, --routing, --moe-capacity-factor.
#include <vector>

#include <nlohmann/json.hpp>

#include "schedules/step_plan.hpp"
#include "tools/capacity_factor_flag.hpp"
#include "tools/cli_args.hpp"

namespace meshsim {

std::vector<OptionSpec> moe_options();
// The MoE part of the plan from the flags (checked later with the plan by check_step_plan).
MoePlan read_moe_plan(const Args& args);
// --moe-token-dispatcher alltoall|allgather|flex [alltoall] (step and sweep).
TokenDispatcher read_token_dispatcher(const Args& args);
// The plan's MoE fields for --json ("ep", "etp", ...); nothing for a dense model.
void put_moe_plan(nlohmann::ordered_json& j, const TransformerModel& model, const StepPlan& p);

}  // namespace meshsim
