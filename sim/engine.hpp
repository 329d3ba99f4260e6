#pragma once
// The discrete-event engine (ARCHITECTURE.md §2 readiness rules, §3 time). It knows ops, streams,
// ranks and time, not what the ops mean: durations come precomputed from a cost model.
#include <cstdint>
#include <functional>
#include <vector>

#include "sim/comm_plan.hpp"
#include "sim/flow_plan.hpp"
#include "sim/program.hpp"
#include "sim/time.hpp"
#include "sim/timeline.hpp"

namespace meshsim {

// Durations for one run: per compute op (indexed by op id; ignored for comm ops), per matched
// transfer, per collective instance.
struct Durations {
  std::vector<Nanos> ops;
  std::vector<Nanos> transfers;
  std::vector<Nanos> collectives;
  // While comm data moves on a rank (a p2p transfer from both sides posted to its completion, a
  // collective from its last member's arrival to its completion; userbuffers collectives
  // excepted), its compute progresses this many times slower (NCCL kernels take SMs and memory
  // bandwidth); 1 = no interference. A kernel only waiting for its peers slows nothing.
  double comm_interference = 1.0;
  // Host issue clock (ARCHITECTURE.md §3): per op (by op id), the host time to issue it. Each
  // rank's host issues its ops in launch order, one after another; an op cannot be dispatched
  // before it is issued, and before issuing an op with a host_wait the host waits for that op to
  // complete. Empty: ops are issued at time 0 (the host always ahead).
  std::vector<Nanos> host;
};

// Signals a run emits; tracing and progress reporting subscribe here.
struct EngineSignals {
  std::function<void(OpId, const OpTiming&)> on_op_complete;
  // index into CommPlan::transfers
  std::function<void(std::int32_t, const WindowTiming&)> on_transfer_complete;
};

// With `flows`, transfers and collectives move their bytes through the flow-level network
// (sharing ports max-min fairly) after their latency; their entries in `durations` are ignored.
Timeline simulate(const Program& program, const CommPlan& plan, const Durations& durations,
                  const EngineSignals& signals = {}, const FlowPlan* flows = nullptr);

}  // namespace meshsim
