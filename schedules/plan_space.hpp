#pragma once
// The space `meshsim sweep` searches: every combination of the given lists of tp, pp,
// cp, vp, microbatch size, pipeline schedule, CP variant, ep and etp (MoE models: expert
// parallelism folded onto tp x cp x dp, schedules/moe_plan.hpp) on a fixed number of GPUs, with
// dp = gpus / (tp x pp x cp), kept when it is a valid plan and counted by the rule it breaks
// otherwise. Rules, in the order they are checked:
//   1. tp x pp x cp divides the GPU count (dp is what is left);
//   2. tp <= GPUs per node (tensor parallelism stays on NVLink);
//   3. vp > 1 only with the interleaved schedule; pp = 1 runs no pipeline schedule (one plan,
//      listed as 1f1b with vp 1); cp = 1 has no CP variant (one plan, listed as zigzag);
//   4. check_step_plan(): heads, kv heads and FFN width divisible by tp, seq by cp (2 cp for
//      zigzag) and seq / cp by tp under sequence parallelism, global batch by dp x mbs, layers
//      over pp x vp stages, the schedule's shape rules (Megatron's interleaving rules, m >= 2p
//      for DualPipeV, ...).
// Plans come out in a fixed order (the lists' nesting: tp, pp, cp, vp, mbs, schedule, variant,
// ep, etp),
// so a sweep's rows are the same whatever runs them.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "schedules/model_catalog.hpp"
#include "schedules/training_step.hpp"

namespace meshsim {

struct PlanLists {
  int gpus = 0;
  int gpus_per_node = 8;
  std::vector<int> tp, pp, cp, vp;
  std::vector<std::int64_t> mbs;
  std::vector<PipelineSchedule> schedules;
  std::vector<RingVariant> cp_variants;
  std::vector<int> ep{1}, etp{0};  // expert parallel sizes; etp 0: = tp
  StepPlan base;  // everything else (gbs, seq, recompute, optimizer, rotation, dtype)
};

struct PlanSpace {
  std::vector<StepPlan> plans;
  std::int64_t combinations = 0;
  // Rejected combinations per rule (the first line of the rule's error message, numbers removed).
  std::map<std::string, std::int64_t> rejected;
};

PlanSpace enumerate_plans(const TransformerModel& model, const PlanLists& lists);

}  // namespace meshsim
