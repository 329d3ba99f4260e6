#pragma once
// The CUDA backend's op records from CUDA events: every op gets a start event recorded on its
// stream right before its kernel or NCCL call (after its cross-stream waits) and an end event right
// after; the origin is an event recorded on every stream after the ranks left the same MPI barrier.
// Elapsed times (cudaEventElapsedTime, milliseconds, ~0.5 us resolution) become the OpRecords the
// CPU executor produces: start and end in nanoseconds since the origin, dispatch_seq the launch
// order (one host thread issues in launch order), and each received transfer of a p2p op complete
// when the op is (NCCL completes a send/recv group as one kernel).
#include <cstdint>
#include <vector>

#include "validate/run/executor.hpp"

namespace meshsim {

struct OpEventTimes {
  float start_ms = 0;  // cudaEventElapsedTime(origin, start)
  float end_ms = 0;    // cudaEventElapsedTime(origin, end)
};

// ops[i], recv_transfers[i] and times[i] describe the rank's i-th op in launch order.
RankRun rank_run_from_events(int rank, const std::vector<OpId>& ops,
                             const std::vector<std::vector<std::int32_t>>& recv_transfers,
                             const std::vector<OpEventTimes>& times);

// Milliseconds to nanoseconds, rounded to nearest; negative (an event racing the origin on
// another stream) clamps to 0.
Nanos event_ms_to_ns(float ms);

}  // namespace meshsim
