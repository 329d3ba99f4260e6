#pragma once
// Maps a Program's communication onto the flow-level network: the ports of the topology (nodes x
// GPUs per node; each GPU's NVLink port into the node's switch and a NIC per rail into a fat tree,
// optionally oversubscribed at the node uplinks) and, per matched transfer and collective
// instance, the gang flow it becomes.
//
// Rails. GPU g of a node sends and receives its inter-node traffic through its own NIC, rail
// g mod NICs per node, and so through the leaf switch of that rail in a rail-optimized fat tree.
// That is NCCL's placement on a DGX-class node (one NIC per GPU, each on the GPU's PCIe switch):
// its topology search gives each GPU the NICs with the best path from it (highest bandwidth, then
// the closest PCI path type; `ncclTopoGetLocalNet` in NCCL's src/graph/topo.cc), and rings and
// trees use the same NIC index on both ends of an inter-node hop unless NCCL_CROSS_NIC says
// otherwise, so that each NIC can sit on its own switch (NCCL's environment-variable
// documentation, NCCL_CROSS_NIC; NVIDIA's rail-optimized InfiniBand cluster designs put NIC r of
// every node on leaf r). DP and CP groups with one GPU per node therefore never share a NIC with
// the groups of the other GPUs of the node.
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
#include "sim/hardware_profile.hpp"
#include "sim/program.hpp"

namespace meshsim {

struct FlowOptions {
  double oversubscription = 1.0;  // > 1: node uplinks carry NICs x NIC bandwidth / this factor
};

struct FlowPlan {
  std::vector<double> port_capacity;  // bytes per second
  std::vector<std::string> port_names;
  std::vector<std::uint8_t> port_class;  // index into kLinkClassNames
  static constexpr std::array<const char*, 3> kLinkClassNames = {"nvlink", "nic", "uplink"};
  std::vector<GangFlow> transfers;    // per CommPlan::transfers
  std::vector<GangFlow> collectives;  // per CommPlan::collectives
};

class Topology {
 public:
  Topology(const Mesh& mesh, const NetworkProfile& net, const FlowOptions& options);

  std::size_t port_count() const { return capacity_.size(); }
  const std::vector<double>& capacity() const { return capacity_; }
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<std::uint8_t>& classes() const { return classes_; }
  // Ports a unit flow from GPU src to GPU dst crosses.
  // A GPU to itself: its own NVLink out and in ports.
  void path(int src, int dst, double units, std::vector<PortLoad>& out) const;
  // Across nodes out of src's node on NIC rail `out_rail` and into dst's node on `in_rail` (a
  // ring channel's crossing).
  void rail_path(int src, int dst, int out_rail, int in_rail, double units,
                 std::vector<PortLoad>& out) const;
  int node_of(int rank) const { return rank / gpus_per_node_; }
  // A GPU's own rail: its NIC, GPU index in the node modulo NICs per node.
  int rail_of(int rank) const { return (rank % gpus_per_node_) % nics_; }
  int nics_per_node() const { return nics_; }
  // The ports GPU `rank` uses, in a fixed order of kinds (NVLink out, in; its rail's NIC out, in;
  // its node's uplink, downlink when oversubscribed): the action of a rank map on ports.
  void gpu_ports(int rank, std::vector<PortId>& out) const;

 private:
  PortId add(std::string name, double capacity, std::uint8_t link_class);

  int gpus_per_node_;
  int nics_;
  bool spine_;
  std::vector<PortId> nvl_out_, nvl_in_;
  std::vector<PortId> nic_out_, nic_in_;  // node * nics + rail
  std::vector<PortId> up_, down_;         // per node, when oversubscribed
  std::vector<double> capacity_;
  std::vector<std::string> names_;
  std::vector<std::uint8_t> classes_;
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
