#pragma once
// The MoE breakdown of a simulated step (meshsim step on an MoE model): per rank, averaged over
// the simulated ranks, the time of the dispatch and combine collectives over EP (from their
// rendezvous to their end; the ETP all-gathers and reduce-scatters count with tp), of the expert
// GEMMs and activations, how much of the expert-parallel communication compute does not hide, and
// the routing's imbalance and dropped tokens.
#include <string>

#include <nlohmann/json.hpp>

#include "schedules/step_plan.hpp"
#include "sim/run.hpp"
#include "sim/step_metrics.hpp"

namespace meshsim {

struct MoeBreakdown {
  double dispatch_s = 0;  // dispatch collectives, forward and backward ("combine bwd" included)
  double combine_s = 0;   // combine collectives ("dispatch bwd" included)
  double expert_compute_s = 0;
  double exposed_ep_comm_s = 0;  // TimeBreakdown's ep
  double hidden_fraction = 0;    // 1 - exposed / (dispatch + combine), the all-to-all hidden
  double imbalance = 1;          // the busiest EP rank's token copies over the mean
  double dropped_fraction = 0;   // token copies dropped by the capacity
  bool operator==(const MoeBreakdown&) const = default;
};

MoeBreakdown moe_breakdown(const TransformerModel& model, const StepPlan& plan,
                           const SimulationResult& result, const TimeBreakdown& breakdown);
nlohmann::ordered_json to_json(const MoeBreakdown& b);
// One line for meshsim step's text output.
std::string moe_lines(const TransformerModel& model, const StepPlan& plan, const MoeBreakdown& b);

}  // namespace meshsim
