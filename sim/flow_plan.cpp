#include "sim/flow_plan.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "sim/network_analytical.hpp"

namespace meshsim {
namespace {

// Accumulates unit flows per port, then hands out the compact usage list in port order.
class UsageBuilder {
 public:
  explicit UsageBuilder(std::size_t ports) : units_(ports, 0.0) {}
  void add(const std::vector<PortLoad>& loads) {
    for (const auto& l : loads) {
      auto& u = units_[static_cast<std::size_t>(l.port)];
      if (u == 0.0) touched_.push_back(l.port);
      u += l.units;
    }
  }
  std::vector<PortLoad> take() {
    std::sort(touched_.begin(), touched_.end());
    std::vector<PortLoad> out;
    out.reserve(touched_.size());
    for (PortId p : touched_) {
      out.push_back(PortLoad{p, units_[static_cast<std::size_t>(p)]});
      units_[static_cast<std::size_t>(p)] = 0.0;
    }
    touched_.clear();
    return out;
  }

 private:
  std::vector<double> units_;
  std::vector<PortId> touched_;
};

Nanos latency_ns(const NetworkProfile& net, bool spans_nodes, int steps) {
  return seconds_to_ns(
      comm_latency(net, spans_nodes ? LinkClass::network : LinkClass::nvlink, steps));
}

}  // namespace

Topology::Topology(const Mesh& mesh, const NetworkProfile& net, const FlowOptions& options)
    : gpus_per_node_(mesh.gpus_per_node()),
      nics_(std::max(1, net.nics_per_node)),
      spine_(options.oversubscription > 1.0) {
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
    if (spine_) {
      const double uplink = static_cast<double>(nics_) * net.nic_bw / options.oversubscription;
      up_.push_back(add(fmt::format("node{} uplink", n), uplink, 2));
      down_.push_back(add(fmt::format("node{} downlink", n), uplink, 2));
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

void Topology::path(int src, int dst, double units, std::vector<PortLoad>& out) const {
  const int ns = node_of(src), nd = node_of(dst);
  if (ns == nd) {
    out.push_back({nvl_out_[static_cast<std::size_t>(src)], units});
    out.push_back({nvl_in_[static_cast<std::size_t>(dst)], units});
    return;
  }
  out.push_back({nic_out_[static_cast<std::size_t>(ns * nics_ + rail_of(src))], units});
  out.push_back({nic_in_[static_cast<std::size_t>(nd * nics_ + rail_of(dst))], units});
  if (spine_) {
    out.push_back({up_[static_cast<std::size_t>(ns)], units});
    out.push_back({down_[static_cast<std::size_t>(nd)], units});
  }
}

void Topology::rail_path(int src, int dst, int rail, double units,
                         std::vector<PortLoad>& out) const {
  const int ns = node_of(src), nd = node_of(dst);
  out.push_back({nic_out_[static_cast<std::size_t>(ns * nics_ + rail % nics_)], units});
  out.push_back({nic_in_[static_cast<std::size_t>(nd * nics_ + rail % nics_)], units});
  if (spine_) {
    out.push_back({up_[static_cast<std::size_t>(ns)], units});
    out.push_back({down_[static_cast<std::size_t>(nd)], units});
  }
}

GangFlow p2p_gang(const Topology& topo, const NetworkProfile& net, int src, int dst,
                  std::int64_t bytes) {
  GangFlow g;
  topo.path(src, dst, 1.0, g.usage);
  g.work = static_cast<double>(bytes);
  g.latency = latency_ns(net, topo.node_of(src) != topo.node_of(dst), 1);
  return g;
}

GangFlow collective_gang(const Topology& topo, const NetworkProfile& net, CollectiveKind kind,
                         const std::vector<int>& ranks, std::int64_t bytes, int shift,
                         CollectiveAlgo algo) {
  GangFlow g;
  g.cause = static_cast<std::uint8_t>(kind);
  const int n = static_cast<int>(ranks.size());
  if (n <= 1) return g;
  const double nd = static_cast<double>(n);
  const double m = static_cast<double>(bytes);
  // Ring order: by node, then GPU, as NCCL builds rings.
  std::vector<int> ring = ranks;
  std::sort(ring.begin(), ring.end());
  std::map<int, int> per_node;
  for (int r : ring) ++per_node[topo.node_of(r)];
  const bool spans = per_node.size() > 1;
  int fewest = n;
  for (const auto& [node, count] : per_node) fewest = std::min(fewest, count);
  UsageBuilder usage(topo.port_count());
  std::vector<PortLoad> hop;

  auto ring_hops = [&](int channels, bool closed) {
    for (int c = 0; c < channels; ++c) {
      const int hops = closed ? n : n - 1;
      for (int i = 0; i < hops; ++i) {
        const int a = ring[static_cast<std::size_t>(i)];
        const int b = ring[static_cast<std::size_t>((i + 1) % n)];
        hop.clear();
        if (topo.node_of(a) == topo.node_of(b)) {
          topo.path(a, b, 1.0, hop);
        } else {
          topo.rail_path(a, b, c, 1.0, hop);  // channel c crosses nodes on rail c
        }
        usage.add(hop);
      }
    }
  };

  if (algo == CollectiveAlgo::tree && kind == CollectiveKind::all_reduce) {
    // Tree all-reduce: per channel, every GPU of the node chain carries the data up and down
    // (2 unit flows on its NVLink ports) and every node's rail NIC the tree's up and down traffic
    // (2 unit flows); work M / channels per unit flow.
    const int channels = spans ? std::min(fewest, net.nics_per_node) : 1;
    for (int c = 0; c < channels; ++c) {
      for (int r : ring) {
        if (per_node[topo.node_of(r)] > 1) topo.path(r, r, 2.0, hop);
      }
      if (spans) {
        for (const auto& [node, count] : per_node) {
          const int first = *std::find_if(ring.begin(), ring.end(),
                                          [&](int r) { return topo.node_of(r) == node; });
          topo.rail_path(first, first, c, 2.0, hop);
        }
      }
    }
    usage.add(hop);
    g.work = m / static_cast<double>(channels);
    g.latency =
        seconds_to_ns(tree_allreduce_latency(net, static_cast<int>(per_node.size()),
                                             std::max(1, n / static_cast<int>(per_node.size()))));
    g.usage = usage.take();
    return g;
  }
  switch (kind) {
    case CollectiveKind::all_reduce:
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter:
    case CollectiveKind::broadcast: {
      const int steps = kind == CollectiveKind::all_reduce ? 2 * (n - 1) : n - 1;
      g.latency = latency_ns(net, spans, steps);
      const GroupPlacement placement{n, static_cast<int>(per_node.size()), fewest};
      if (kind == CollectiveKind::all_reduce && uses_nvls(net, placement, algo)) {
        // NVLink SHARP: the switch reduces; each GPU port runs at the NVLS bus bandwidth.
        const double units = net.nvlink_bus_bw / net.nvls_bus_bw;
        for (int r : ring) {
          topo.path(r, r, units, hop);  // out and in of the GPU's own NVLink port
        }
        usage.add(hop);
        g.work = 2.0 * (nd - 1) / nd * m;
        break;
      }
      const int channels = spans ? std::min(fewest, net.nics_per_node) : 1;
      ring_hops(channels, kind != CollectiveKind::broadcast);
      const double per_hop =
          kind == CollectiveKind::broadcast ? m : static_cast<double>(steps) * m / nd;
      g.work = per_hop / static_cast<double>(channels);
      break;
    }
    case CollectiveKind::all_to_all: {
      // Pairwise: every ordered pair is a unit flow of M/n bytes. Per GPU that is (members on its
      // node - 1) unit flows over NVLink and n - (members on its node) through its rail NIC, in
      // each direction.
      g.latency = latency_ns(net, spans, 1);
      for (int a : ring) {
        const int local = per_node[topo.node_of(a)];
        if (local > 1) {
          hop.clear();
          topo.path(a, a, static_cast<double>(local - 1), hop);
          usage.add(hop);
        }
        if (n > local) {
          hop.clear();
          topo.rail_path(a, a, topo.rail_of(a), static_cast<double>(n - local), hop);
          usage.add(hop);
        }
      }
      g.work = m / nd;
      break;
    }
    case CollectiveKind::permute:
      g.latency = latency_ns(net, spans, 1);
      for (int i = 0; i < n; ++i) {
        const int a = ranks[static_cast<std::size_t>(i)];
        const int b = ranks[static_cast<std::size_t>(((i + shift) % n + n) % n)];
        if (a == b) continue;
        hop.clear();
        topo.path(a, b, 1.0, hop);
        usage.add(hop);
      }
      g.work = m;
      break;
    case CollectiveKind::barrier:
      g.latency = latency_ns(net, spans, 2 * (n - 1));
      break;
  }
  g.usage = usage.take();
  return g;
}

FlowPlan plan_flows(const Program& program, const CommPlan& plan, const NetworkProfile& net,
                    const FlowOptions& options) {
  const Topology topo(program.mesh, net, options);
  FlowPlan fp;
  fp.port_capacity = topo.capacity();
  fp.port_names = topo.names();
  fp.port_class = topo.classes();
  fp.transfers.reserve(plan.transfers.size());
  for (const auto& t : plan.transfers)
    fp.transfers.push_back(p2p_gang(topo, net, t.src, t.dst, t.bytes));
  fp.collectives.reserve(plan.collectives.size());
  for (const auto& inst : plan.collectives) {
    const auto& call =
        std::get<CollectiveCall>(program.ops[static_cast<std::size_t>(inst.members.front())].body);
    fp.collectives.push_back(collective_gang(
        topo, net, inst.kind, program.groups[static_cast<std::size_t>(inst.group)].ranks,
        inst.bytes, call.shift, inst.algo));
  }
  return fp;
}

}  // namespace meshsim
