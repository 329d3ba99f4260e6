#pragma once
// The space `meshsim sweep` searches: every combination of the given lists of tp, pp,
// cp, vp, microbatch size, pipeline schedule, CP variant, ep and etp (MoE models: expert
// parallelism folded onto tp x cp x dp, schedules/moe_plan.hpp) on a fixed number of GPUs, with
// dp = gpus / (tp x pp x cp), kept when it is a valid plan and counted by the rule it breaks
// otherwise, with the reason in its numbers. Rules, in the order they are checked (ids in []):
//   1. [mesh-divides-gpus] tp x pp x cp divides the GPU count (dp is what is left);
//   2. [tp-within-node] tp <= GPUs per node (tensor parallelism stays on NVLink);
//   3. [vp-needs-interleaved] vp > 1 only with the interleaved schedule; [pp1-one-plan] pp = 1
//      runs no pipeline schedule (one plan, listed as 1f1b with vp 1); [cp1-one-variant] cp = 1
//      has no CP variant (one plan, listed as zigzag);
//   4. check_step_plan(): heads, kv heads and FFN width divisible by tp, seq by cp (2 cp for
//      zigzag) and seq / cp by tp under sequence parallelism, global batch by dp x mbs, layers
//      over pp x vp stages, the schedule's shape rules (Megatron's interleaving rules, m >= 2p
//      for DualPipeV, ...); the id is rule_id() of its message.
// Plans come out in a fixed order (the lists' nesting: tp, pp, cp, vp, mbs, schedule, variant,
// ep, etp, recompute, sharding, precision), so a sweep's rows are the same whatever runs them.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schedules/memory_model.hpp"
#include "schedules/model_catalog.hpp"
#include "schedules/training_step.hpp"

namespace meshsim {

// A sharding the sweep searches: the ZeRO stage over dp x cp (zero1 is Megatron-LM's distributed
// optimizer) or FSDP2 (ZeRO-3 with fp32 sharded parameters); its replicas (HSDP) and resharding
// come from the plan the lists start from.
struct ShardingChoice {
  int zero = 0;
  bool fsdp = false;
  bool operator==(const ShardingChoice&) const = default;
};
std::string_view to_string(ShardingChoice c);  // "none", "zero1", "zero2", "zero3", "fsdp"
std::optional<ShardingChoice> parse_sharding_choice(std::string_view name);
// The choice a plan's sharding is.
ShardingChoice sharding_choice(const StepPlan& plan);

struct PlanLists {
  int gpus = 0;
  int gpus_per_node = 8;
  std::vector<int> tp, pp, cp, vp;
  std::vector<std::int64_t> mbs;
  std::vector<PipelineSchedule> schedules;
  std::vector<RingVariant> cp_variants;
  std::vector<int> ep{1}, etp{0};        // expert parallel sizes; etp 0: = tp
  std::vector<Recompute> recompute;      // empty: base's
  std::vector<ShardingChoice> sharding;  // empty: base's
  std::vector<Precision> precision;      // empty: base's
  // The loss of every plan; unset: default_cross_entropy of the plan's recompute (base's is not
  // read: plan_cross_entropy decides).
  std::optional<CrossEntropy> cross_entropy;
  StepPlan base;  // everything else (gbs, seq, optimizer, rotation, dtype)
};

// The loss a plan with this recompute computes: the one given for the sweep, else the recompute's
// default (default_cross_entropy).
CrossEntropy plan_cross_entropy(const PlanLists& lists, Recompute recompute);

// One combination of the lists.
struct Combination {
  int tp = 1, pp = 1, cp = 1, vp = 1;
  std::int64_t mbs = 1;
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  RingVariant cp_variant = RingVariant::zigzag;
  int ep = 1, etp = 0;  // expert parallel sizes (etp 0: = tp)
  Recompute recompute = Recompute::none;
  ShardingChoice sharding;
  Precision precision = Precision::bf16;
};

// Why a combination is not a plan: the rule's id and the reason with its numbers (messages of
// check_step_plan name fields in backquotes, sim/error.hpp).
struct Rejection {
  Combination combination;
  std::string rule;
  std::string reason;
};

// The plan of one combination, or the rule it breaks.
struct CombinationOutcome {
  std::optional<StepPlan> plan;
  Rejection rejection;  // when there is no plan
};
CombinationOutcome check_combination(const TransformerModel& model, const PlanLists& lists,
                                     const Combination& c);

// A rule's id from its message: the backquoted field names joined by '-', each once ("`gbs` ...
// `dp` x `mbs`" -> "gbs-dp-mbs"), else the first four words ("the step would have ..." ->
// "the-step-would-have").
std::string rule_id(std::string_view message);

// The recompute and sharding lists, the base plan's value when a list is empty.
std::vector<Recompute> recompute_list(const PlanLists& lists);
std::vector<ShardingChoice> sharding_list(const PlanLists& lists);
std::vector<Precision> precision_list(const PlanLists& lists);

struct PlanSpace {
  std::vector<StepPlan> plans;
  std::int64_t combinations = 0;
  std::map<std::string, std::int64_t> rejected;  // rejected combinations per rule id
  std::vector<Rejection> rejections;             // each, in enumeration order
};

PlanSpace enumerate_plans(const TransformerModel& model, const PlanLists& lists);

}  // namespace meshsim
