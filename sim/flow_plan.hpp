#pragma once
// Maps a Program's communication onto the flow-level network (the ports of sim/flow_topology.hpp,
// where the rails and switch tiers are described) and, per matched transfer and collective
// instance, the gang flow it becomes.
//
// Collectives decompose into their algorithm's steps. Ring all-reduce (2(n-1) steps), all-gather
// and reduce-scatter (n-1 steps) run over the group ordered by (node, GPU), as NCCL builds rings,
// with one ring channel per NIC across nodes (min(g, NICs per node) channels for g group GPUs per
// node, one inside a node). Channel c leaves and enters each node through the rail of the node's
// c-th group member, counting each rail once; when members share a rail (fewer NICs than GPUs),
// the remaining channels take the node's unused rails in order, as NCCL spreads channels over all
// NICs a GPU reaches through NVLink. Every step of a ring moves the same bytes over the same hops,
// so a ring collective is one gang whose unit flow is one hop of one channel carrying
// steps x M/(n x channels) bytes, with the latency of all its steps paid first; contention on
// any port it crosses slows the whole collective, and bytes are conserved per port. All-to-all
// is pairwise (every ordered pair a unit flow of M/n bytes, through each GPU's own rail); a
// permutation sends each rank's buffer to one peer; broadcast is a pipelined chain; intra-node
// all-reduce uses NVLS where the profile has it. Uncontended, each gang takes exactly the
// analytical model's time.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/comm_plan.hpp"
#include "sim/flow_network.hpp"
#include "sim/flow_topology.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/program.hpp"

namespace meshsim {

struct FlowPlan {
  std::vector<double> port_capacity;  // bytes per second
  std::vector<std::string> port_names;
  std::vector<std::uint8_t> port_class;  // index into kLinkClassNames
  // Ports of the whole network each port stands for: 1, or its orbit's size in a folded run.
  std::vector<double> port_multiplicity;
  static constexpr auto kLinkClassNames = Topology::kLinkClassNames;
  std::vector<GangFlow> transfers;    // per CommPlan::transfers
  std::vector<GangFlow> collectives;  // per CommPlan::collectives
};

// The gang of one collective over `ranks` (in group order) of `bytes` (CollectiveCall meaning).
GangFlow collective_gang(const Topology& topo, const NetworkProfile& net, CollectiveKind kind,
                         const std::vector<int>& ranks, std::int64_t bytes, int shift,
                         CollectiveAlgo algo = CollectiveAlgo::automatic);
GangFlow p2p_gang(const Topology& topo, const NetworkProfile& net, int src, int dst,
                  std::int64_t bytes);

FlowPlan plan_flows(const Program& program, const CommPlan& plan, const NetworkProfile& net,
                    const FlowOptions& options);

}  // namespace meshsim
