#include "schedules/plan_space.hpp"

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
  Combination c;
  for (int tp : lists.tp) {
    c.tp = tp;
    for (int pp : lists.pp) {
      c.pp = pp;
      for (int cp : lists.cp) {
        c.cp = cp;
        for (int vp : lists.vp) {
          c.vp = vp;
          for (std::int64_t mbs : lists.mbs) {
            c.mbs = mbs;
            for (PipelineSchedule schedule : lists.schedules) {
              c.schedule = schedule;
              for (RingVariant variant : lists.cp_variants) {
                c.cp_variant = variant;
                for (int ep : lists.ep) {
                  c.ep = ep;
                  for (int etp : lists.etp) {
                    c.etp = etp;
                    ++space.combinations;
                    CombinationOutcome o = check_combination(model, lists, c);
                    if (o.plan) {
                      space.plans.push_back(*std::move(o.plan));
                    } else {
                      ++space.rejected[o.rejection.rule];
                      space.rejections.push_back(std::move(o.rejection));
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return space;
}

}  // namespace meshsim
