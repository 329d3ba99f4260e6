#pragma once
// The measured timeline (ARCHITECTURE.md §5): every rank's op records, gathered to one place, as
// the same Timeline type the simulator produces, so that the trace writer and the reports read
// both.
//
//   op start/end       dispatch and completion as measured on the rank (barrier-aligned clock);
//   transfer window    start = the later of the two sides' dispatch (the rendezvous), end = when
//                      the receiver had the data;
//   collective window  start = the last member's dispatch, end = the last member's completion;
//   comm_start         p2p: the earliest of its transfers' starts; collective: the window start;
//   completed_by       the transfer that ended last (p2p) or the instance (collective);
//   causes             the readiness condition met last before the dispatch: the stream
//                      predecessor's or a dep's completion, or (single queue) the previous launch's
//                      dispatch — whichever happened latest.
// Records cross ranks as int64 arrays (encode/decode), the form MpiSession::gather moves.
#include <cstdint>
#include <span>
#include <vector>

#include "sim/comm_plan.hpp"
#include "sim/program.hpp"
#include "sim/timeline.hpp"
#include "validate/run/executor.hpp"

namespace meshsim {

std::vector<std::int64_t> encode_rank_run(const RankRun& run);
// Throws InvariantError on a malformed array.
RankRun decode_rank_run(std::span<const std::int64_t> data);

// `runs` holds one RankRun per rank (any order); every op of the Program must have a record.
Timeline measured_timeline(const Program& program, const CommPlan& plan,
                           const std::vector<RankRun>& runs);

}  // namespace meshsim
