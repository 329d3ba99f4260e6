#include "validate/cuda/event_timing.hpp"

#include <algorithm>
#include <cmath>

#include "sim/error.hpp"

namespace meshsim {

Nanos event_ms_to_ns(float ms) {
  if (!(ms > 0.0F)) return 0;
  return static_cast<Nanos>(std::llround(static_cast<double>(ms) * 1e6));
}

RankRun rank_run_from_events(int rank, const std::vector<OpId>& ops,
                             const std::vector<std::vector<std::int32_t>>& recv_transfers,
                             const std::vector<OpEventTimes>& times) {
  MESHSIM_CHECK(ops.size() == times.size() && ops.size() == recv_transfers.size(),
                "rank_run_from_events: one time and one receive list per op");
  RankRun run;
  run.rank = rank;
  run.ops.reserve(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    OpRecord r;
    r.op = ops[i];
    r.start = event_ms_to_ns(times[i].start_ms);
    r.end = std::max(r.start, event_ms_to_ns(times[i].end_ms));
    r.dispatch_seq = static_cast<std::int64_t>(i);
    run.ops.push_back(r);
    run.wall = std::max(run.wall, r.end);
    for (const std::int32_t t : recv_transfers[i]) run.recv_ends.push_back(TransferEnd{t, r.end});
  }
  return run;
}

}  // namespace meshsim
