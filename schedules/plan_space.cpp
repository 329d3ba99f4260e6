#include "schedules/plan_space.hpp"

#include <cctype>

#include "sim/error.hpp"

namespace meshsim {
namespace {

// A rule's message with its numbers blanked, so rejections of one rule group together.
std::string rule_of(const std::string& message) {
  std::string out;
  bool in_number = false;
  for (char ch : message) {
    if (std::isdigit(static_cast<unsigned char>(ch)) != 0) {
      if (!in_number) out += 'N';
      in_number = true;
    } else {
      out += ch;
      in_number = false;
    }
  }
  return out;
}

}  // namespace

namespace {

// One combination of the lists: rejected by the first rule it breaks, or kept.
void consider(const TransformerModel& model, const PlanLists& lists, StepPlan plan,
              PipelineSchedule schedule, PlanSpace& space) {
  auto reject = [&](const std::string& rule) { ++space.rejected[rule]; };
  ++space.combinations;
  const int tp = plan.tp, pp = plan.pp, cp = plan.cp, vp = plan.vp;
  const std::int64_t mesh = std::int64_t{tp} * pp * cp;
  if (mesh <= 0 || lists.gpus % mesh != 0) {
    reject("tp x pp x cp must divide the GPU count");
    return;
  }
  if (tp > lists.gpus_per_node) {
    reject("tp must not exceed the GPUs per node");
    return;
  }
  if (vp > 1 && schedule != PipelineSchedule::interleaved) {
    reject("vp > 1 needs the interleaved schedule");
    return;
  }
  if (pp == 1 && (schedule != lists.schedules.front() || vp != lists.vp.front())) {
    reject("pp = 1 runs no pipeline schedule (one plan)");
    return;
  }
  if (cp == 1 && plan.cp_variant != lists.cp_variants.front()) {
    reject("cp = 1 has no CP variant (one plan)");
    return;
  }
  plan.dp = static_cast<int>(lists.gpus / mesh);
  plan.schedule = pp == 1 ? PipelineSchedule::one_f_one_b : schedule;
  plan.vp = pp == 1 ? 1 : vp;
  if (cp == 1) plan.cp_variant = RingVariant::zigzag;
  if (plan.schedule == PipelineSchedule::zb_v || plan.schedule == PipelineSchedule::dualpipev) {
    plan.vp = 2;
  }
  try {
    check_step_plan(model, plan);
  } catch (const InputError& e) {
    reject(rule_of(e.what()));
    return;
  }
  space.plans.push_back(plan);
}

}  // namespace

PlanSpace enumerate_plans(const TransformerModel& model, const PlanLists& lists) {
  PlanSpace space;
  StepPlan plan = lists.base;
  for (int tp : lists.tp) {
    for (int pp : lists.pp) {
      for (int cp : lists.cp) {
        for (int vp : lists.vp) {
          for (std::int64_t mbs : lists.mbs) {
            for (PipelineSchedule schedule : lists.schedules) {
              for (RingVariant variant : lists.cp_variants) {
                for (int ep : lists.ep) {
                  for (int etp : lists.etp) {
                    plan.tp = tp;
                    plan.pp = pp;
                    plan.cp = cp;
                    plan.vp = vp;
                    plan.microbatch_size = mbs;
                    plan.cp_variant = variant;
                    plan.moe.ep = ep;
                    plan.moe.etp = etp;
                    consider(model, lists, plan, schedule, space);
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
