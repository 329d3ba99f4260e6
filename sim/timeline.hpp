#pragma once
// What a run of a Program produced: per-op start/end, per-transfer and per-collective windows and
// what released each op (for the critical path). The simulator and the validate executors both
// produce a Timeline; traces and metrics read it.
#include <cstdint>
#include <vector>

#include "sim/flow_network.hpp"
#include "sim/program.hpp"
#include "sim/time.hpp"

namespace meshsim {

struct OpTiming {
  Nanos start = -1;       // dispatched (a comm kernel occupies its stream from here)
  Nanos comm_start = -1;  // comm ops: when data started to move (rendezvous done)
  Nanos end = -1;
};

// Why an op was dispatched when it was: the event that satisfied its last readiness condition.
struct OpCause {
  OpId op = -1;              // -1: ready at time 0
  bool by_dispatch = false;  // true: released by `op` being dispatched (single-queue launch order)
  // true: released by the host issuing it (ARCHITECTURE.md §3 host issue clock); `op` is the
  // host-sync op whose completion the host last waited for (-1: none, the host ran from 0)
  bool by_host = false;
};

struct WindowTiming {
  Nanos start = -1;
  Nanos end = -1;
  OpId started_by = -1;  // the op whose dispatch completed the rendezvous
};

// The host issue clock (ARCHITECTURE.md §3): a rank's host waiting, before it issues `op`, for
// `waited` to complete, from the host time it got there to the completion.
struct HostWait {
  int rank = 0;
  OpId op = -1;
  OpId waited = -1;
  Nanos from = 0;
  Nanos to = 0;
};

struct Timeline {
  std::vector<OpTiming> ops;
  std::vector<OpCause> causes;
  std::vector<WindowTiming> transfers;    // indexed like CommPlan::transfers
  std::vector<WindowTiming> collectives;  // indexed like CommPlan::collectives
  // comm ops: the transfer (p2p) or collective instance whose completion completed the op
  std::vector<std::int32_t> completed_by;
  Nanos makespan = 0;
  std::uint64_t events = 0;                // engine events processed
  std::vector<PortStats> ports;            // flow-level network runs: bytes and busy time per port
  std::vector<LinkRateSample> link_rates;  // flow-level runs: bandwidth in use per link class
  std::vector<HostWait> host_waits;        // host clock on: each wait that took time, in order
};

}  // namespace meshsim
