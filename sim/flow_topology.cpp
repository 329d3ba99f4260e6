#include "sim/flow_topology.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {

Topology::Topology(const Mesh& mesh, const NetworkProfile& net, const FlowOptions& options)
    : gpus_per_node_(mesh.gpus_per_node()),
      nics_(std::max(1, net.nics_per_node)),
      uplinks_(options.oversubscription > 1.0),
      leaf_nodes_(std::max(1, options.leaf_nodes)),
      rail_optimized_(options.rail_optimized) {
  const int world = mesh.world_size();
  const int nodes = mesh.num_nodes();
  for (int r = 0; r < world; ++r) {
    nvl_out_.push_back(add(fmt::format("gpu{} nvlink out", r), net.nvlink_bus_bw, 0));
    nvl_in_.push_back(add(fmt::format("gpu{} nvlink in", r), net.nvlink_bus_bw, 0));
  }
  for (int n = 0; n < nodes; ++n) {
    for (int k = 0; k < nics_; ++k) {
      nic_out_.push_back(add(fmt::format("node{} nic{} out", n, k), net.nic_bw, 1));
      nic_in_.push_back(add(fmt::format("node{} nic{} in", n, k), net.nic_bw, 1));
    }
    if (uplinks_) {
      const double uplink = static_cast<double>(nics_) * net.nic_bw / options.oversubscription;
      up_.push_back(add(fmt::format("node{} uplink", n), uplink, 2));
      down_.push_back(add(fmt::format("node{} downlink", n), uplink, 2));
    }
  }
  if (options.spine_oversubscription > 1.0) add_leaves(nodes, net, options);
}

// One spine uplink and downlink per leaf (header: Tiers), after every node's ports so that the
// other ports keep their ids. Source of the leaf rule: https://docs.nvidia.com/dgx-superpod/
// reference-architecture-scalable-infrastructure-h100/latest/network-fabrics.html (Compute Fabric).
void Topology::add_leaves(int nodes, const NetworkProfile& net, const FlowOptions& options) {
  const int groups = (nodes + leaf_nodes_ - 1) / leaf_nodes_;
  const int per_group = rail_optimized_ ? nics_ : 1;
  const double nics_below = static_cast<double>(leaf_nodes_) * (rail_optimized_ ? 1 : nics_);
  const double capacity = nics_below * net.nic_bw / options.spine_oversubscription;
  for (int g = 0; g < groups; ++g) {
    for (int k = 0; k < per_group; ++k) {
      const std::string leaf =
          rail_optimized_ ? fmt::format("leaf{} rail{}", g, k) : fmt::format("leaf{}", g);
      spine_up_.push_back(add(leaf + " spine up", capacity, 3));
      spine_down_.push_back(add(leaf + " spine down", capacity, 3));
    }
  }
}

PortId Topology::add(std::string name, double capacity, std::uint8_t link_class) {
  MESHSIM_CHECK(capacity > 0, fmt::format("port {} without bandwidth", name));
  classes_.push_back(link_class);
  capacity_.push_back(capacity);
  names_.push_back(std::move(name));
  return static_cast<PortId>(capacity_.size() - 1);
}

int Topology::leaf_of(int node, int rail) const {
  const int group = node / leaf_nodes_;
  return rail_optimized_ ? group * nics_ + rail % nics_ : group;
}

void Topology::spine_path(int ns, int out_rail, int nd, int in_rail, double units,
                          std::vector<PortLoad>& out) const {
  if (!has_spine()) return;
  const int from = leaf_of(ns, out_rail), to = leaf_of(nd, in_rail);
  if (from == to) return;
  out.push_back({spine_up_[static_cast<std::size_t>(from)], units});
  out.push_back({spine_down_[static_cast<std::size_t>(to)], units});
}

void Topology::leaf_spine_ports(int leaf, double up, double down,
                                std::vector<PortLoad>& out) const {
  if (!has_spine() || (up <= 0 && down <= 0)) return;
  out.push_back({spine_up_[static_cast<std::size_t>(leaf)], up});
  out.push_back({spine_down_[static_cast<std::size_t>(leaf)], down});
}

void Topology::path(int src, int dst, double units, std::vector<PortLoad>& out) const {
  if (node_of(src) == node_of(dst)) {
    out.push_back({nvl_out_[static_cast<std::size_t>(src)], units});
    out.push_back({nvl_in_[static_cast<std::size_t>(dst)], units});
    return;
  }
  rail_path(src, dst, rail_of(src), rail_of(dst), units, out);
}

void Topology::rail_path(int src, int dst, int out_rail, int in_rail, double units,
                         std::vector<PortLoad>& out) const {
  const int ns = node_of(src), nd = node_of(dst);
  out.push_back({nic_out_[static_cast<std::size_t>(ns * nics_ + out_rail % nics_)], units});
  out.push_back({nic_in_[static_cast<std::size_t>(nd * nics_ + in_rail % nics_)], units});
  if (uplinks_) {
    out.push_back({up_[static_cast<std::size_t>(ns)], units});
    out.push_back({down_[static_cast<std::size_t>(nd)], units});
  }
  spine_path(ns, out_rail, nd, in_rail, units, out);
}

void Topology::gpu_ports(int rank, std::vector<PortId>& out) const {
  const auto r = static_cast<std::size_t>(rank);
  const int node = node_of(rank);
  const auto nic = static_cast<std::size_t>(node * nics_ + rail_of(rank));
  out.assign({nvl_out_[r], nvl_in_[r], nic_out_[nic], nic_in_[nic]});
  if (uplinks_) {
    out.push_back(up_[static_cast<std::size_t>(node)]);
    out.push_back(down_[static_cast<std::size_t>(node)]);
  }
  if (has_spine()) {
    const auto leaf = static_cast<std::size_t>(leaf_of(node, rail_of(rank)));
    out.push_back(spine_up_[leaf]);
    out.push_back(spine_down_[leaf]);
  }
}

}  // namespace meshsim
