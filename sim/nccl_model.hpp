#pragma once
// NCCL's own cost model of its collectives, as NCCL uses it to choose an algorithm and a protocol
// for each call (NVIDIA/nccl src/graph/tuning.cc, ncclTopoTuneModel and ncclTopoGetAlgoTime, NCCL
// 2.19-2.21): a profile with "collective_model": "nccl" costs all-reduce, all-gather and
// reduce-scatter this way (ARCHITECTURE.md §3).
//
// Ring, per protocol p in {LL, LL128, Simple}:
//   latency = base_p + (steps - inter) x intra_p + inter x network_p
// with steps = 2(n-1) (all-reduce) or n-1 (all-gather, reduce-scatter), inter = 2 x nodes
// (all-reduce over several nodes) or nodes - 1 the steps that cross nodes, intra_p the NVLink
// step latency (at least NCCL's 1 us network post overhead, 3 us for Simple, once the ring spans
// nodes); Simple's multi-node all-reduce latency x 1.4 (NCCL's "plateau effect of ring").
//   bus bandwidth = ring bus bandwidth B x (1 for Simple; 0.92 for LL128, 0.7 with one rank per
//   node; 1/4 for LL, 1/3 for a single-node all-gather or reduce-scatter, at most NCCL's LL cap).
// Tree (an all-reduce over several nodes), per protocol:
//   latency = base_p + 2 x ((ranks per node - 1) x intra_p + floor(log2 nodes) x network_p)
//   bus bandwidth = 0.92 B (LL: / 3.8, at most the LL cap; LL128: x 120/128) x NCCL's correction
//   for the message size; time = latency + 2M / bus bandwidth.
// NVLS (an all-reduce inside a node with NVLink SHARP): NCCL's 23 us at the NVLS bandwidth.
// The call takes the candidate with the least time.
#include <cstdint>
#include <string_view>

#include "sim/hardware_profile.hpp"
#include "sim/network_analytical.hpp"
#include "sim/program.hpp"

namespace meshsim {

// How one collective runs: its latency, the seconds each byte of the call's buffer adds, the
// nccl-tests bus bandwidth that amounts to, the algorithm and the protocol.
struct NcclTiming {
  double latency = 0;           // s
  double seconds_per_byte = 0;  // per byte of CollectiveCall bytes
  double bus_bw = 0;            // bytes/s, nccl-tests' bus bandwidth
  NcclAlgorithm algorithm = NcclAlgorithm::ring;
  NcclProtocol protocol = NcclProtocol::simple;
  int steps = 0;
};

// An all-reduce (or barrier), all-gather or reduce-scatter of `bytes` (CollectiveCall bytes) over
// `placement`, whose ring reaches `ring_bw` bus bandwidth. `algo`: automatic (the fastest
// candidate; the tree only when `tree_allowed`), ring, tree (all-reduce) or nvls (all-reduce).
// Under the alpha-beta model: Simple, every step at the latency of the link class the group
// spans, NVLS where uses_nvls says, the tree only when forced.
NcclTiming collective_timing(const NetworkProfile& net, CollectiveKind kind,
                             const GroupPlacement& placement, std::int64_t bytes,
                             CollectiveAlgo algo, double ring_bw, bool tree_allowed = true);

// NCCL's ring latency of protocol `p` for this collective over `placement` (seconds), and the
// bus bandwidth it reaches on a ring of bus bandwidth `ring_bw`.
double nccl_latency(const NetworkProfile& net, NcclProtocol p, CollectiveKind kind,
                    const GroupPlacement& placement);
double nccl_bus_bw(NcclProtocol p, CollectiveKind kind, const GroupPlacement& placement,
                   double ring_bw);
// NCCL's tree all-reduce latency of protocol `p` (seconds), and its bus bandwidth for a message
// of `bytes` on a ring of bus bandwidth `ring_bw` (size correction included).
double nccl_tree_latency(NcclProtocol p, const GroupPlacement& placement);
double nccl_tree_bus_bw(NcclProtocol p, const GroupPlacement& placement, std::int64_t bytes,
                        double ring_bw);

}  // namespace meshsim
