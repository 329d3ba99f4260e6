#pragma once
// What bandwidth a flow-level run's collectives achieved, per (group dim, collective kind), and
// which link class bounds them: the numbers that say which link limited a step.
//
// A collective instance's time is its window, rendezvous to completion (latency included, as
// nccl-tests times an operation); its bus bytes are CollectiveCall bytes x busbw_factor (kind,
// group size), the nccl-tests definitions (ARCHITECTURE.md §3). `busbw` sums bus bytes over
// summed time; `min_busbw` is the slowest instance's; `alone_busbw` is what the same instances
// reach with the network to themselves (each gang at the rate of its most loaded port, so within
// 1 % of the analytical model): achieved below alone means contention. `limited_by` is the link
// class (FlowPlan::kLinkClassNames) of the port that bounds most of the bytes when alone.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/comm_plan.hpp"
#include "sim/flow_plan.hpp"
#include "sim/program.hpp"
#include "sim/timeline.hpp"

namespace meshsim {

struct CollectiveBandwidth {
  std::string dim;  // the group's mesh dimension ("tp", "dp-cp", ...)
  CollectiveKind kind = CollectiveKind::all_reduce;
  int instances = 0;
  double bytes = 0;        // CollectiveCall bytes, summed
  double time_s = 0;       // windows, summed
  double busbw = 0;        // bytes per second
  double min_busbw = 0;    // bytes per second
  double alone_busbw = 0;  // bytes per second
  std::string limited_by;  // "nvlink", "nic" or "uplink"
};

// Over the run's collective instances that move bytes, in order of (dim, kind).
std::vector<CollectiveBandwidth> collective_bandwidth(const Program& program, const CommPlan& plan,
                                                      const FlowPlan& flows,
                                                      const Timeline& timeline);

}  // namespace meshsim
