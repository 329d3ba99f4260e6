#pragma once
// The ports of the flow-level network (ARCHITECTURE.md §3): nodes x GPUs per node (a node is the
// NVLink domain: 8 GPUs on a DGX, 72 on a GB200 NVL72), each GPU's NVLink port into the node's
// switch and a NIC per rail into a fat tree; optionally oversubscribed node uplinks and
// oversubscribed leaf-to-spine links.
//
// Rails. GPU g of a node sends and receives its inter-node traffic through its own NIC, rail
// g mod NICs per node, and so through the leaf switch of that rail in a rail-optimized fat tree.
// That is NCCL's placement on a DGX-class node (one NIC per GPU, each on the GPU's PCIe switch):
// its topology search gives each GPU the NICs with the best path from it (highest bandwidth, then
// the closest PCI path type; `ncclTopoGetLocalNet` in NCCL's src/graph/topo.cc), and rings and
// trees use the same NIC index on both ends of an inter-node hop unless NCCL_CROSS_NIC says
// otherwise, so that each NIC can sit on its own switch (NCCL's environment-variable
// documentation, NCCL_CROSS_NIC). DP and CP groups with one GPU per node therefore never share a
// NIC with the groups of the other GPUs of the node. A GB200 NVL72 domain has one NIC per GPU
// (4 per compute tray, 72 per domain), so its 72 GPUs have 72 rails.
//
// Tiers. Node uplinks (`oversubscription` F > 1): every inter-node flow also crosses its node's
// uplink and the destination node's downlink, each carrying NICs x NIC bandwidth / F. Leaves and
// spine (`spine_oversubscription` F_s > 1): nodes form leaf groups of `leaf_nodes` consecutive
// nodes; rail-optimized, rail r of every node of a group is on that group's leaf r, so traffic
// on one rail within a group is one switch hop and traffic between groups or between rails
// crosses the spine (NVIDIA DGX SuperPOD reference architecture, DGX H100, "Network Fabrics",
// compute fabric: each scalable unit's 32 nodes are rail-aligned, one switch hop apart per rail,
// and traffic between scalable units or between rails goes through the spine layer; there as
// many leaf-spine as node-leaf cables, 1:1). Single-rail (`rail_optimized` false): every NIC of a
// group's nodes is on the group's one leaf, and only traffic between groups crosses the spine. A
// leaf's spine uplink and downlink each carry its downlinks' bandwidth / F_s: leaf_nodes x NIC (x
// NICs per node when single-rail), the full size of a group even when the last group is partial, as
// the reference architecture sizes the fabric for full scalable units.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/flow_network.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/mesh.hpp"

namespace meshsim {

struct FlowOptions {
  double oversubscription = 1.0;  // > 1: node uplinks carry NICs x NIC bandwidth / this factor
  // Leaf-spine tier (only when spine_oversubscription > 1): nodes per leaf switch (per rail when
  // rail-optimized; 32 in the DGX SuperPOD's scalable unit), and the factor by which a leaf's
  // spine links carry less than its downlinks.
  int leaf_nodes = 32;
  double spine_oversubscription = 1.0;
  bool rail_optimized = true;
};

class Topology {
 public:
  static constexpr std::array<const char*, 4> kLinkClassNames = {"nvlink", "nic", "uplink",
                                                                 "spine"};

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
  // Whether the leaf-spine tier is modelled (spine oversubscription > 1).
  bool has_spine() const { return !spine_up_.empty(); }
  // The leaf switch of `rail` on `node` (header: Tiers).
  int leaf_of(int node, int rail) const;
  // The spine ports a unit flow from rail `out_rail` of node `ns` to rail `in_rail` of node `nd`
  // crosses: the source leaf's spine uplink and the destination leaf's downlink when the leaves
  // differ, nothing otherwise or without a spine tier.
  void spine_path(int ns, int out_rail, int nd, int in_rail, double units,
                  std::vector<PortLoad>& out) const;
  // `up` unit flows on leaf `leaf`'s spine uplink and `down` on its downlink (with a spine tier).
  void leaf_spine_ports(int leaf, double up, double down, std::vector<PortLoad>& out) const;
  // The ports GPU `rank` uses, in a fixed order of kinds (NVLink out, in; its rail's NIC out, in;
  // its node's uplink, downlink when oversubscribed; its rail's leaf spine uplink, downlink with a
  // spine tier): the action of a rank map on ports.
  void gpu_ports(int rank, std::vector<PortId>& out) const;

 private:
  PortId add(std::string name, double capacity, std::uint8_t link_class);
  void add_leaves(int nodes, const NetworkProfile& net, const FlowOptions& options);

  int gpus_per_node_;
  int nics_;
  bool uplinks_;
  int leaf_nodes_;
  bool rail_optimized_;
  std::vector<PortId> nvl_out_, nvl_in_;
  std::vector<PortId> nic_out_, nic_in_;       // node * nics + rail
  std::vector<PortId> up_, down_;              // per node, when oversubscribed
  std::vector<PortId> spine_up_, spine_down_;  // per leaf, with a spine tier
  std::vector<double> capacity_;
  std::vector<std::string> names_;
  std::vector<std::uint8_t> classes_;
};

}  // namespace meshsim
