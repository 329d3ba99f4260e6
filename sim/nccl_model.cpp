#include "sim/nccl_model.hpp"

#include <algorithm>
#include <array>
#include <limits>

namespace meshsim {
namespace {

// NCCL's ring latencies per protocol (src/graph/tuning.cc, NCCL 2.19-2.21): baseLat Ring
// {LL 6.6, LL128 14.0, Simple 8.4} us; hwLat NVLink Ring {0.6, 1.9, 3.4} us; hwLat NET Ring
// {2.7, 4.0, 14.0} us. Simple's are the profile's own figures (the built-ins carry NCCL's).
struct ProtocolLatency {
  double base, nvlink_step, network_step;  // s
};
constexpr ProtocolLatency kLl{6.6e-6, 0.6e-6, 2.7e-6};
constexpr ProtocolLatency kLl128{14.0e-6, 1.9e-6, 4.0e-6};
// getNetOverhead: 1 us per step on an x86 Intel host (2 us on AMD), x3 for Simple; the NVLink
// steps of a ring that spans nodes take at least that long.
constexpr double kNetOverhead = 1.0e-6;
// ncclTopoGetAlgoTime: a ring Simple all-reduce across nodes pays its latency x 1.4 (compute
// capability 8.0 and later; "plateau effect of ring").
constexpr double kRingPlateau = 1.4;
// hwLat NVLink NVLS Simple, with baseLat 0 for NVLS.
constexpr double kNvlsLatency = 23e-6;
// Ring LL128 reaches 0.92 of the bus bandwidth (120 of 128 bytes are payload), 0.7 with fewer
// than 2 ranks per node.
constexpr double kLl128Share = 0.92;
constexpr double kLl128OnePerNode = 0.7;

// llMaxBws, bytes/s: one node on Ampere or Hopper 87.7 GB/s; across 2 nodes 39.0, more 20.4
// (the Intel-host row; AMD hosts: 22.5 and 19.0).
double ll_cap(int nodes) {
  if (nodes <= 1) return 87.7e9;
  return nodes == 2 ? 39.0e9 : 20.4e9;
}

bool reduces_twice(CollectiveKind kind) {
  return kind == CollectiveKind::all_reduce || kind == CollectiveKind::barrier;
}

ProtocolLatency figures(const NetworkProfile& net, NcclProtocol p) {
  switch (p) {
    case NcclProtocol::ll:
      return kLl;
    case NcclProtocol::ll128:
      return kLl128;
    case NcclProtocol::simple:
      break;
  }
  return ProtocolLatency{net.base_latency, net.nvlink_step_latency, net.network_step_latency};
}

int ring_steps(CollectiveKind kind, int ranks) {
  return reduces_twice(kind) ? 2 * (ranks - 1) : ranks - 1;
}

// The ring steps that cross nodes: NCCL's nInterSteps, 2 x nodes for an all-reduce, nodes - 1
// for an all-gather or reduce-scatter (capped at the ring's steps: NCCL's 2 x nodes exceeds
// 2(n - 1) when each node holds one rank).
int crossing_steps(CollectiveKind kind, const GroupPlacement& p) {
  if (p.nodes <= 1) return 0;
  return std::min(ring_steps(kind, p.ranks), reduces_twice(kind) ? 2 * p.nodes : p.nodes - 1);
}

}  // namespace

double nccl_latency(const NetworkProfile& net, NcclProtocol p, CollectiveKind kind,
                    const GroupPlacement& placement) {
  const ProtocolLatency f = figures(net, p);
  const int steps = ring_steps(kind, placement.ranks);
  const int inter = crossing_steps(kind, placement);
  double intra = f.nvlink_step;
  if (placement.nodes > 1) {
    intra = std::max(intra, kNetOverhead * (p == NcclProtocol::simple ? 3.0 : 1.0));
  }
  double latency = f.base + static_cast<double>(steps - inter) * intra +
                   static_cast<double>(inter) * f.network_step;
  if (p == NcclProtocol::simple && placement.nodes > 1 && reduces_twice(kind)) {
    latency *= kRingPlateau;
  }
  return latency;
}

double nccl_bus_bw(NcclProtocol p, CollectiveKind kind, const GroupPlacement& placement,
                   double ring_bw) {
  switch (p) {
    case NcclProtocol::ll: {
      const bool quarter = placement.nodes > 1 || reduces_twice(kind);
      return std::min(ll_cap(placement.nodes), ring_bw * (quarter ? 1.0 / 4.0 : 1.0 / 3.0));
    }
    case NcclProtocol::ll128: {
      const double per_node =
          static_cast<double>(placement.ranks) / static_cast<double>(std::max(1, placement.nodes));
      return ring_bw * (per_node < 2 ? kLl128OnePerNode : kLl128Share);
    }
    case NcclProtocol::simple:
      break;
  }
  return ring_bw;
}

RingTiming ring_timing(const NetworkProfile& net, CollectiveKind kind,
                       const GroupPlacement& placement, std::int64_t bytes, CollectiveAlgo algo,
                       double ring_bw) {
  const int n = placement.ranks;
  const bool nvls_candidate = kind == CollectiveKind::all_reduce && uses_nvls(net, placement, algo);
  RingTiming best;
  best.steps = ring_steps(kind, n);
  if (!net.nccl_model) {
    const LinkClass link = placement.nodes > 1 ? LinkClass::network : LinkClass::nvlink;
    best.latency = comm_latency(net, link, best.steps);
    best.bus_bw = nvls_candidate ? net.nvls_bus_bw : ring_bw;
    best.nvls = nvls_candidate;
    return best;
  }
  const double payload = kind == CollectiveKind::barrier ? 0.0 : static_cast<double>(bytes);
  const double bus_bytes =
      busbw_factor(reduces_twice(kind) ? CollectiveKind::all_reduce : kind, n) * payload;
  double best_seconds = std::numeric_limits<double>::infinity();
  const auto consider = [&](const RingTiming& t) {
    const double seconds = t.latency + bus_bytes / t.bus_bw;
    if (seconds < best_seconds) {
      best_seconds = seconds;
      best = t;
    }
  };
  if (algo != CollectiveAlgo::nvls) {
    for (NcclProtocol p : {NcclProtocol::simple, NcclProtocol::ll128, NcclProtocol::ll}) {
      consider(RingTiming{nccl_latency(net, p, kind, placement),
                          nccl_bus_bw(p, kind, placement, ring_bw), false, p, best.steps});
    }
  }
  if (nvls_candidate) {
    consider(RingTiming{kNvlsLatency, net.nvls_bus_bw, true, NcclProtocol::simple, best.steps});
  }
  return best;
}

}  // namespace meshsim
