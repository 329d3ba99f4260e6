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

// NCCL's tree latencies per protocol: baseLat Tree {LL 6.8, LL128 14.0, Simple 0} us; hwLat
// NVLink Tree {0.6, 1.25, 28} us (a hop of the chain through a node), NET Tree {5.0, 8.5, 28} us
// (a level of the tree over the nodes).
constexpr ProtocolLatency kTreeLl{6.8e-6, 0.6e-6, 5.0e-6};
constexpr ProtocolLatency kTreeLl128{14.0e-6, 1.25e-6, 8.5e-6};
constexpr ProtocolLatency kTreeSimple{0.0, 28e-6, 28e-6};
// Tree bus bandwidth: 0.92 of the channels' (LL: then / 3.8; LL128: x 120/128 across nodes).
constexpr double kTreeShare = 0.92;
constexpr double kTreeLlDivisor = 3.8;
constexpr double kTreeLl128Share = 120.0 / 128.0;
// treeCorrectionFactor[protocol][log2(bytes / 64)], message sizes 64 B to 256 MB; 1 beyond.
constexpr std::array<std::array<double, 23>, 3> kTreeCorrection = {{
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6, .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0},  // LL
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6, .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0},  // LL128
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
     .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},  // Simple
}};

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

// Ranks on each node of the group (the chain a tree runs inside a node), at least 1.
int ranks_per_node(const GroupPlacement& p) {
  return std::max(1, p.ranks / std::max(1, p.nodes));
}

// The tree's algorithm steps: up and down ceil(log2 nodes) levels and the (ranks per node - 1)
// hops of each node's chain.
int tree_steps(const GroupPlacement& p) {
  int depth = 0;
  while ((1 << depth) < p.nodes) ++depth;
  return 2 * (depth + ranks_per_node(p) - 1);
}

int floor_log2(int x) {
  int l = 0;
  while (x > 1) {
    x >>= 1;
    ++l;
  }
  return l;
}

ProtocolLatency tree_figures(NcclProtocol p) {
  switch (p) {
    case NcclProtocol::ll:
      return kTreeLl;
    case NcclProtocol::ll128:
      return kTreeLl128;
    case NcclProtocol::simple:
      break;
  }
  return kTreeSimple;
}

constexpr std::array<NcclProtocol, 3> kProtocols = {NcclProtocol::simple, NcclProtocol::ll128,
                                                    NcclProtocol::ll};

// The alpha-beta model: Simple, every step at the latency of the link class the group spans;
// NVLS where uses_nvls says; the tree (forced) at base + 2 x (ceil(log2 nodes) network steps +
// (g - 1) NVLink steps) + 2M / B.
NcclTiming alpha_beta_timing(const NetworkProfile& net, CollectiveKind kind,
                             const GroupPlacement& placement, CollectiveAlgo algo, double ring_bw) {
  const int n = placement.ranks;
  NcclTiming t;
  if (algo == CollectiveAlgo::tree && kind == CollectiveKind::all_reduce) {
    t.algorithm = NcclAlgorithm::tree;
    t.steps = tree_steps(placement);
    t.latency = tree_allreduce_latency(net, placement.nodes, ranks_per_node(placement));
    t.bus_bw = ring_bw;
    t.seconds_per_byte = 2.0 / ring_bw;
    return t;
  }
  const bool nvls = kind == CollectiveKind::all_reduce && uses_nvls(net, placement, algo);
  const LinkClass link = placement.nodes > 1 ? LinkClass::network : LinkClass::nvlink;
  t.steps = ring_steps(kind, n);
  t.latency = comm_latency(net, link, t.steps);
  t.bus_bw = nvls ? net.nvls_bus_bw : ring_bw;
  t.algorithm = nvls ? NcclAlgorithm::nvls : NcclAlgorithm::ring;
  t.seconds_per_byte =
      busbw_factor(reduces_twice(kind) ? CollectiveKind::all_reduce : kind, n) / t.bus_bw;
  return t;
}

}  // namespace

double nccl_tree_latency(NcclProtocol p, const GroupPlacement& placement) {
  const ProtocolLatency f = tree_figures(p);
  return f.base + 2.0 * (static_cast<double>(ranks_per_node(placement) - 1) * f.nvlink_step +
                         static_cast<double>(floor_log2(placement.nodes)) * f.network_step);
}

double nccl_tree_bus_bw(NcclProtocol p, const GroupPlacement& placement, std::int64_t bytes,
                        double ring_bw) {
  double bw = ring_bw * kTreeShare;
  if (p == NcclProtocol::ll) bw = std::min(bw / kTreeLlDivisor, ll_cap(placement.nodes));
  if (p == NcclProtocol::ll128) bw *= placement.nodes == 1 ? 7.0 / 9.0 : kTreeLl128Share;
  const int log_size = floor_log2(static_cast<int>(
      std::min<std::int64_t>(std::max<std::int64_t>(bytes >> 6, 1), std::int64_t{1} << 30)));
  if (log_size < 23) {
    bw *= kTreeCorrection[static_cast<std::size_t>(p)][static_cast<std::size_t>(log_size)];
  }
  return bw;
}

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

NcclTiming collective_timing(const NetworkProfile& net, CollectiveKind kind,
                             const GroupPlacement& placement, std::int64_t bytes,
                             CollectiveAlgo algo, double ring_bw, bool tree_allowed) {
  if (!net.nccl_model) return alpha_beta_timing(net, kind, placement, algo, ring_bw);
  const int n = placement.ranks;
  const bool all_reduce = kind == CollectiveKind::all_reduce;
  const double payload = kind == CollectiveKind::barrier ? 0.0 : static_cast<double>(bytes);
  const double factor = busbw_factor(reduces_twice(kind) ? CollectiveKind::all_reduce : kind, n);
  NcclTiming best;
  double best_seconds = std::numeric_limits<double>::infinity();
  const auto consider = [&](NcclAlgorithm a, NcclProtocol p, double latency, double bus_bw,
                            double seconds_per_byte, int steps) {
    const double seconds = latency + payload * seconds_per_byte;
    if (seconds < best_seconds) {
      best_seconds = seconds;
      best = NcclTiming{latency, seconds_per_byte, bus_bw, a, p, steps};
    }
  };
  const bool ring =
      algo == CollectiveAlgo::automatic || algo == CollectiveAlgo::ring || !all_reduce;
  if (ring) {
    for (NcclProtocol p : kProtocols) {
      const double bw = nccl_bus_bw(p, kind, placement, ring_bw);
      consider(NcclAlgorithm::ring, p, nccl_latency(net, p, kind, placement), bw, factor / bw,
               ring_steps(kind, n));
    }
  }
  const bool tree =
      all_reduce && (algo == CollectiveAlgo::tree ||
                     (algo == CollectiveAlgo::automatic && tree_allowed && placement.nodes > 1));
  if (tree) {
    const int steps = tree_steps(placement);
    for (NcclProtocol p : kProtocols) {
      const double bw = nccl_tree_bus_bw(p, placement, bytes, ring_bw);
      // NCCL's tree algorithm bandwidth is half its bus bandwidth: time = latency + 2M / bw;
      // in nccl-tests' terms, bus bandwidth 2(n-1)/n x M / (2M / bw).
      consider(NcclAlgorithm::tree, p, nccl_tree_latency(p, placement), factor * bw / 2.0, 2.0 / bw,
               steps);
    }
  }
  if (all_reduce && algo != CollectiveAlgo::ring && algo != CollectiveAlgo::tree &&
      uses_nvls(net, placement, algo)) {
    consider(NcclAlgorithm::nvls, NcclProtocol::simple, kNvlsLatency, net.nvls_bus_bw,
             factor / net.nvls_bus_bw, ring_steps(kind, n));
  }
  return best;
}

}  // namespace meshsim
