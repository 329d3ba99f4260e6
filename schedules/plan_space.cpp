#include "schedules/plan_space.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {
namespace {

// Rules 1-3 (plan_space.hpp), or nullopt when the combination passes them.
std::optional<Rejection> mesh_rule(const PlanLists& lists, const Combination& c) {
  auto reject = [&](std::string rule, std::string reason) {
    return Rejection{c, std::move(rule), std::move(reason)};
  };
  const std::int64_t mesh = std::int64_t{c.tp} * c.pp * c.cp;
  if (mesh <= 0 || lists.gpus % mesh != 0) {
    return reject("mesh-divides-gpus",
                  fmt::format("tp x pp x cp = {} x {} x {} = {} does not divide the {} GPUs", c.tp,
                              c.pp, c.cp, mesh, lists.gpus));
  }
  if (c.tp > lists.gpus_per_node) {
    return reject("tp-within-node",
                  fmt::format("tp {} exceeds the {} GPUs per node", c.tp, lists.gpus_per_node));
  }
  if (c.vp > 1 && c.schedule != PipelineSchedule::interleaved) {
    return reject(
        "vp-needs-interleaved",
        fmt::format("vp {} needs the interleaved schedule, not {}", c.vp, to_string(c.schedule)));
  }
  if (c.pp == 1 && (c.schedule != lists.schedules.front() || c.vp != lists.vp.front())) {
    return reject("pp1-one-plan",
                  fmt::format("pp 1 runs no pipeline schedule: {} vp {} is the plan listed as {} "
                              "vp {}",
                              to_string(c.schedule), c.vp, to_string(lists.schedules.front()),
                              lists.vp.front()));
  }
  if (c.cp == 1 && c.cp_variant != lists.cp_variants.front()) {
    return reject("cp1-one-variant",
                  fmt::format("cp 1 has no CP variant: {} is the plan listed as {}",
                              to_string(c.cp_variant), to_string(lists.cp_variants.front())));
  }
  return std::nullopt;
}

}  // namespace

std::string_view to_string(ShardingChoice c) {
  if (c.fsdp) return "fsdp";
  constexpr std::array<std::string_view, 4> names = {"none", "zero1", "zero2", "zero3"};
  return names[static_cast<std::size_t>(std::clamp(c.zero, 0, 3))];
}

std::optional<ShardingChoice> parse_sharding_choice(std::string_view name) {
  for (const ShardingChoice c :
       {ShardingChoice{0, false}, ShardingChoice{1, false}, ShardingChoice{2, false},
        ShardingChoice{3, false}, ShardingChoice{3, true}}) {
    if (to_string(c) == name) return c;
  }
  return std::nullopt;
}

ShardingChoice sharding_choice(const StepPlan& plan) {
  // A plan with only distributed_optimizer set shards its optimizer state: ZeRO-1.
  return {std::max(plan.sharding.zero, plan.distributed_optimizer ? 1 : 0), plan.sharding.fsdp};
}

std::vector<Recompute> recompute_list(const PlanLists& lists) {
  return lists.recompute.empty() ? std::vector<Recompute>{lists.base.recompute} : lists.recompute;
}

std::vector<Precision> precision_list(const PlanLists& lists) {
  return lists.precision.empty() ? std::vector<Precision>{lists.base.precision} : lists.precision;
}

std::vector<ShardingChoice> sharding_list(const PlanLists& lists) {
  return lists.sharding.empty() ? std::vector<ShardingChoice>{sharding_choice(lists.base)}
                                : lists.sharding;
}

std::string rule_id(std::string_view message) {
  std::string id;
  for (std::size_t at = message.find('`'); at != std::string_view::npos;) {
    const std::size_t end = message.find('`', at + 1);
    if (end == std::string_view::npos) break;
    const std::string field(message.substr(at + 1, end - at - 1));
    if (("-" + id + "-").find("-" + field + "-") == std::string::npos) {
      id += (id.empty() ? "" : "-") + field;
    }
    at = message.find('`', end + 1);
  }
  if (id.empty()) {
    int words = 0;
    bool in_word = false;
    for (char ch : message) {
      const bool alpha = std::isalpha(static_cast<unsigned char>(ch)) != 0;
      if (alpha && !in_word && words == 4) break;
      if (alpha && !in_word) id += (words++ == 0 ? "" : "-");
      if (alpha) id += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      in_word = alpha;
    }
  }
  for (char& ch : id) ch = ch == '_' ? '-' : ch;
  return id;
}

CrossEntropy plan_cross_entropy(const PlanLists& lists, Recompute recompute) {
  return lists.cross_entropy.value_or(default_cross_entropy(recompute));
}

CombinationOutcome check_combination(const TransformerModel& model, const PlanLists& lists,
                                     const Combination& c) {
  if (auto r = mesh_rule(lists, c)) return {std::nullopt, *std::move(r)};
  StepPlan plan = lists.base;
  plan.tp = c.tp;
  plan.pp = c.pp;
  plan.cp = c.cp;
  plan.dp = static_cast<int>(lists.gpus / (std::int64_t{c.tp} * c.pp * c.cp));
  plan.microbatch_size = c.mbs;
  plan.schedule = c.pp == 1 ? PipelineSchedule::one_f_one_b : c.schedule;
  plan.vp = c.pp == 1 ? 1 : c.vp;
  plan.cp_variant = c.cp == 1 ? RingVariant::zigzag : c.cp_variant;
  plan.moe.ep = c.ep;
  plan.moe.etp = c.etp;
  plan.recompute = c.recompute;
  plan.cross_entropy = plan_cross_entropy(lists, c.recompute);
  plan.sharding.zero = c.sharding.zero;
  plan.sharding.fsdp = c.sharding.fsdp;
  plan.distributed_optimizer = c.sharding.zero >= 1;
  plan.precision = c.precision;
  // TP communication overlap applies to the plans with tensor parallelism.
  plan.tp_comm_overlap = lists.base.tp_comm_overlap && c.tp > 1;
  plan.tp_overlap_rs = plan.tp_comm_overlap ? lists.base.tp_overlap_rs : TpOverlapRs::pipeline;
  // zb-v and dualpipev run their two chunks per rank with vp 1 in the plan (check_step_plan).
  try {
    check_step_plan(model, plan);
  } catch (const InputError& e) {
    return {std::nullopt, Rejection{c, rule_id(e.what()), e.what()}};
  }
  return {plan, {}};
}

PlanSpace enumerate_plans(const TransformerModel& model, const PlanLists& lists) {
  PlanSpace space;
  const std::vector<Recompute> recomputes = recompute_list(lists);
  const std::vector<ShardingChoice> shardings = sharding_list(lists);
  const std::vector<Precision> precisions = precision_list(lists);
  // An odometer over the lists' indices, the last list turning fastest.
  const std::vector<std::size_t> sizes = {
      lists.tp.size(),  lists.pp.size(),        lists.cp.size(),          lists.vp.size(),
      lists.mbs.size(), lists.schedules.size(), lists.cp_variants.size(), lists.ep.size(),
      lists.etp.size(), recomputes.size(),      shardings.size(),         precisions.size()};
  if (std::find(sizes.begin(), sizes.end(), std::size_t{0}) != sizes.end()) return space;
  std::vector<std::size_t> at(sizes.size(), 0);
  for (;;) {
    const Combination c{lists.tp[at[0]],          lists.pp[at[1]],   lists.cp[at[2]],
                        lists.vp[at[3]],          lists.mbs[at[4]],  lists.schedules[at[5]],
                        lists.cp_variants[at[6]], lists.ep[at[7]],   lists.etp[at[8]],
                        recomputes[at[9]],        shardings[at[10]], precisions[at[11]]};
    ++space.combinations;
    CombinationOutcome o = check_combination(model, lists, c);
    if (o.plan) {
      space.plans.push_back(*std::move(o.plan));
    } else {
      ++space.rejected[o.rejection.rule];
      space.rejections.push_back(std::move(o.rejection));
    }
    std::size_t k = sizes.size();
    while (k > 0 && ++at[k - 1] == sizes[k - 1]) at[--k] = 0;
    if (k == 0) break;
  }
  return space;
}

}  // namespace meshsim
