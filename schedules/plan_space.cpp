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

PlanSpace enumerate_plans(const TransformerModel& model, const PlanLists& lists) {
  PlanSpace space;
  auto reject = [&](const std::string& rule) { ++space.rejected[rule]; };
  for (int tp : lists.tp) {
    for (int pp : lists.pp) {
      for (int cp : lists.cp) {
        for (int vp : lists.vp) {
          for (std::int64_t mbs : lists.mbs) {
            for (PipelineSchedule schedule : lists.schedules) {
              for (RingVariant variant : lists.cp_variants) {
                ++space.combinations;
                const std::int64_t mesh = std::int64_t{tp} * pp * cp;
                if (mesh <= 0 || lists.gpus % mesh != 0) {
                  reject("tp x pp x cp must divide the GPU count");
                  continue;
                }
                if (tp > lists.gpus_per_node) {
                  reject("tp must not exceed the GPUs per node");
                  continue;
                }
                const bool interleaved = schedule == PipelineSchedule::interleaved;
                if (vp > 1 && !interleaved) {
                  reject("vp > 1 needs the interleaved schedule");
                  continue;
                }
                if (pp == 1 && (schedule != lists.schedules.front() || vp != lists.vp.front())) {
                  reject("pp = 1 runs no pipeline schedule (one plan)");
                  continue;
                }
                if (cp == 1 && variant != lists.cp_variants.front()) {
                  reject("cp = 1 has no CP variant (one plan)");
                  continue;
                }
                StepPlan plan = lists.base;
                plan.tp = tp;
                plan.pp = pp;
                plan.cp = cp;
                plan.dp = static_cast<int>(lists.gpus / mesh);
                plan.microbatch_size = mbs;
                plan.schedule = pp == 1 ? PipelineSchedule::one_f_one_b : schedule;
                plan.vp = pp == 1 ? 1 : vp;
                plan.cp_variant = cp == 1 ? RingVariant::zigzag : variant;
                if (plan.schedule == PipelineSchedule::zb_v ||
                    plan.schedule == PipelineSchedule::dualpipev) {
                  plan.vp = 2;
                }
                try {
                  check_step_plan(model, plan);
                } catch (const InputError& e) {
                  reject(rule_of(e.what()));
                  continue;
                }
                space.plans.push_back(plan);
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
