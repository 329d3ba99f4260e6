#pragma once
// Metrics from a timeline (ARCHITECTURE.md §3): makespan; per rank compute-busy, comm-busy, exposed
// comm, idle; bytes sent and transfers; the critical path by category.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/comm_plan.hpp"
#include "sim/program.hpp"
#include "sim/timeline.hpp"

namespace meshsim {

struct RankMetrics {
  int rank = 0;
  std::int64_t ops = 0;
  Nanos compute = 0;       // union of compute-kernel intervals
  Nanos comm = 0;          // union of comm-kernel intervals (dispatch to completion)
  Nanos exposed_comm = 0;  // comm time not covered by compute
  Nanos idle = 0;          // neither compute nor comm
  std::int64_t bytes_sent = 0;
  std::int64_t sends = 0;        // outgoing point-to-point transfers (p2p sends, permutes)
  std::int64_t collectives = 0;  // collective calls other than permutes
  // Query-key pairs computed per head and sample over the forward's attention blocks (the
  // backward's when the Program has no forward blocks).
  std::int64_t attn_pairs = 0;
};

struct CriticalPathCategory {
  // kernel kind ("attention_fwd", ...), comm kind ("p2p", "all_gather") or "host" (the host
  // issue clock: time the host spent issuing ops after it last waited for the device)
  std::string category;
  Nanos time = 0;
  std::int64_t ops = 0;
};

struct RunMetrics {
  Nanos makespan = 0;
  std::vector<RankMetrics> ranks;
  // Sorted by time, largest first; the times add up to the makespan.
  std::vector<CriticalPathCategory> critical_path;
  std::vector<OpId> critical_ops;  // from the first op to the last
  std::int64_t bytes_nvlink = 0;   // bytes sent over NVLink (inside a node)
  std::int64_t bytes_network = 0;  // bytes sent across nodes
};

RunMetrics compute_metrics(const Program& program, const CommPlan& plan, const Timeline& timeline);

}  // namespace meshsim
