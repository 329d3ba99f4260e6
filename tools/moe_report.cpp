#include "tools/moe_report.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

#include <fmt/format.h>

#include "sim/time.hpp"

namespace meshsim {

MoeBreakdown moe_breakdown(const TransformerModel& m, const StepPlan& p, const SimulationResult& r,
                           const TimeBreakdown& breakdown) {
  MoeBreakdown b;
  const Program& prog = r.program;
  std::vector<bool> active(static_cast<std::size_t>(prog.world_size()), false);
  // Per rank, the end of the EP collectives counted so far: flex's RDMA and NVLink all-to-alls
  // run together, and a stage counts only where it outlasts the one beside it.
  std::vector<Nanos> counted_to(static_cast<std::size_t>(prog.world_size()), Nanos{0});
  for (std::size_t i = 0; i < prog.ops.size(); ++i) {
    const Op& op = prog.ops[i];
    active[static_cast<std::size_t>(op.rank)] = true;
    const OpTiming& t = r.timeline.ops[i];
    if (std::holds_alternative<CollectiveCall>(op.body)) {
      const std::string& dim =
          prog.groups[static_cast<std::size_t>(std::get<CollectiveCall>(op.body).group)].dim;
      if (dim != "ep") continue;  // the ETP gathers count with tp, as in the time breakdown
      Nanos& to = counted_to[static_cast<std::size_t>(op.rank)];
      const double s = ns_to_seconds(std::max(Nanos{0}, t.end - std::max(t.comm_start, to)));
      to = std::max(to, t.end);
      // "combine bwd" moves like a dispatch, "dispatch bwd" like a combine.
      const bool dispatch = op.name.find("combine bwd") != std::string::npos ||
                            (op.name.find("dispatch") != std::string::npos &&
                             op.name.find("dispatch bwd") == std::string::npos);
      (dispatch ? b.dispatch_s : b.combine_s) += s;
    } else if (op.name.find("expert ") != std::string::npos) {
      b.expert_compute_s += ns_to_seconds(t.end - t.start);
    }
  }
  const double ranks = static_cast<double>(std::count(active.begin(), active.end(), true));
  if (ranks > 0) {
    b.dispatch_s /= ranks;
    b.combine_s /= ranks;
    b.expert_compute_s /= ranks;
  }
  b.exposed_ep_comm_s = breakdown.exposed_of("ep");
  const double comm = b.dispatch_s + b.combine_s;
  b.hidden_fraction = comm > 0 ? std::max(0.0, 1.0 - b.exposed_ep_comm_s / comm) : 0;
  const ExpertLoad load = expert_load(*m.moe, p.moe, 1 << 16);
  b.imbalance = load.imbalance;
  const double kept = std::accumulate(load.tokens.begin(), load.tokens.end(), 0.0);
  b.dropped_fraction = load.dropped / (kept + load.dropped);
  return b;
}

nlohmann::ordered_json to_json(const MoeBreakdown& b) {
  nlohmann::ordered_json j;
  j["dispatch_s"] = b.dispatch_s;
  j["combine_s"] = b.combine_s;
  j["expert_compute_s"] = b.expert_compute_s;
  j["exposed_ep_comm_s"] = b.exposed_ep_comm_s;
  j["ep_comm_hidden_fraction"] = b.hidden_fraction;
  j["imbalance"] = b.imbalance;
  j["dropped_fraction"] = b.dropped_fraction;
  j["averaged_over"] = "simulated ranks";  // folded: the busiest EP rank (moe_lines)
  return j;
}

std::string moe_lines(const TransformerModel& m, const StepPlan& p, const MoeBreakdown& b) {
  const int etp = expert_tp(p.moe, p.tp);
  std::string s = fmt::format(
      "  MoE: {} of {} layers, {} experts top {}{}; ep {} etp {} edp {}, {} dispatcher, {} "
      "routing\n",
      moe_layer_count(m), m.layers, m.moe->experts, m.moe->top_k,
      m.moe->shared_experts > 0 ? fmt::format(" + {} shared", m.moe->shared_experts) : "", p.moe.ep,
      etp, p.tp * p.cp * p.dp / (etp * p.moe.ep), to_string(p.moe.dispatcher),
      p.moe.routing.origin);
  s += fmt::format(
      "moe per rank   dispatch {:.6f} s, combine {:.6f} s, expert compute {:.6f} s; exposed ep "
      "comm {:.6f} s ({:.1f} % of the all-to-all hidden); imbalance {:.2f}, dropped {:.2f} %\n",
      b.dispatch_s, b.combine_s, b.expert_compute_s, b.exposed_ep_comm_s, 100.0 * b.hidden_fraction,
      b.imbalance, 100.0 * b.dropped_fraction);
  if (p.fold_dp && p.moe.ep > 1 && b.imbalance > 1.0) {
    // Folding builds one EP rank, the busiest (every EP rank waits for it at the combine): its
    // times are that rank's; the step time is the same either way.
    s += "               (per-rank times are the busiest EP rank's, the one folding builds; "
         "--no-fold averages over every rank)\n";
  }
  return s;
}

}  // namespace meshsim
