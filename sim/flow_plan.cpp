#include "sim/flow_plan.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "sim/flow_fold.hpp"
#include "sim/nccl_model.hpp"
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
      comm_latency(net, spans_nodes ? LinkClass::network : LinkClass::nvlink, steps),
      [&] { return fmt::format("a comm latency with {}", describe_network(net)); });
}

// Where a collective's ranks sit: its ring in NCCL's order (by node, then GPU), its members per
// node, its channels across nodes and, per node, the NIC rail each channel leaves and enters on.
struct GangLayout {
  std::vector<int> ring;
  std::map<int, int> per_node;
  bool spans = false;  // over more than one node
  int fewest = 0;      // members on the node with the fewest
  int channels = 1;    // min(fewest, NICs per node) across nodes, 1 inside a node
  std::map<int, std::vector<int>> channel_rails;  // per node: the rail of each channel
};

// The rails of `channels` channels on one node: the rails of its members in GPU order, each once,
// then the node's unused rails in order (sim/flow_topology.hpp: Rails).
std::vector<int> channel_rails(const Topology& topo, const std::vector<int>& members,
                               int channels) {
  std::vector<int> rails;
  const auto taken = [&](int rail) {
    return std::find(rails.begin(), rails.end(), rail) != rails.end();
  };
  for (int r : members) {
    if (static_cast<int>(rails.size()) == channels) break;
    if (!taken(topo.rail_of(r))) rails.push_back(topo.rail_of(r));
  }
  for (int rail = 0; static_cast<int>(rails.size()) < channels; ++rail) {
    if (!taken(rail)) rails.push_back(rail);
  }
  return rails;
}

GangLayout gang_layout(const Topology& topo, const std::vector<int>& ranks) {
  GangLayout layout;
  layout.ring = ranks;
  std::sort(layout.ring.begin(), layout.ring.end());
  std::map<int, std::vector<int>> members;
  for (int r : layout.ring) members[topo.node_of(r)].push_back(r);
  layout.spans = members.size() > 1;
  layout.fewest = static_cast<int>(ranks.size());
  for (const auto& [node, on_node] : members) {
    layout.per_node[node] = static_cast<int>(on_node.size());
    layout.fewest = std::min(layout.fewest, static_cast<int>(on_node.size()));
  }
  if (!layout.spans) return layout;
  layout.channels = std::min(layout.fewest, topo.nics_per_node());
  for (const auto& [node, on_node] : members) {
    layout.channel_rails[node] = channel_rails(topo, on_node, layout.channels);
  }
  return layout;
}

// The layout as the analytical model sees a group: ranks, nodes, the fewest on one node.
GroupPlacement placement_of(const GangLayout& layout) {
  return GroupPlacement{static_cast<int>(layout.ring.size()),
                        static_cast<int>(layout.per_node.size()), layout.fewest};
}

// The rail channel c uses on `rank`'s node.
int rail_on(const Topology& topo, const GangLayout& layout, int rank, int c) {
  return layout.channel_rails.at(topo.node_of(rank))[static_cast<std::size_t>(c)];
}

// The unit flows of the layout's channels over its ring, `closed` back to its first rank or not;
// a hop between nodes leaves on the channel's rail of the sending node and enters on the
// receiving node's.
void add_ring_hops(const Topology& topo, const GangLayout& layout, bool closed,
                   UsageBuilder& usage) {
  const int n = static_cast<int>(layout.ring.size());
  std::vector<PortLoad> hop;
  for (int c = 0; c < layout.channels; ++c) {
    const int hops = closed ? n : n - 1;
    for (int i = 0; i < hops; ++i) {
      const int a = layout.ring[static_cast<std::size_t>(i)];
      const int b = layout.ring[static_cast<std::size_t>((i + 1) % n)];
      hop.clear();
      if (topo.node_of(a) == topo.node_of(b)) {
        topo.path(a, b, 1.0, hop);
      } else {
        topo.rail_path(a, b, rail_on(topo, layout, a, c), rail_on(topo, layout, b, c), 1.0, hop);
      }
      usage.add(hop);
    }
  }
}

// Tree all-reduce: per channel, every GPU of the node chain carries the data up and down (2 unit
// flows on its NVLink ports) and every node's NIC on the channel's rail the tree's up and down
// traffic (2 unit flows); work M / channels per unit flow.
void tree_all_reduce_flows(const Topology& topo, const NetworkProfile& net,
                           const GangLayout& layout, double m, const NcclTiming& timing,
                           UsageBuilder& usage, GangFlow& g) {
  const int channels = layout.channels;
  std::vector<PortLoad> hop;
  for (int c = 0; c < channels; ++c) {
    for (int r : layout.ring) {
      if (layout.per_node.at(topo.node_of(r)) > 1) topo.path(r, r, 2.0, hop);
    }
    if (layout.spans) {
      for (const auto& [node, count] : layout.per_node) {
        const int first =
            *std::find_if(layout.ring.begin(), layout.ring.end(),
                          [&topo, on = node](int r) { return topo.node_of(r) == on; });
        const int rail = rail_on(topo, layout, first, c);
        topo.rail_path(first, first, rail, rail, 2.0, hop);
      }
    }
  }
  usage.add(hop);
  // Alone, this moves at 2M / B (B the ring's bus bandwidth); a protocol or size correction that
  // reaches less puts that much more work on the ports (timing.seconds_per_byte against 2 / B).
  const double natural = 2.0 / ring_bus_bw(net, placement_of(layout), false);
  g.work = m / static_cast<double>(channels) * (timing.seconds_per_byte / natural);
  g.latency = seconds_to_ns(timing.latency, [&] {
    return fmt::format("a tree all-reduce latency with {}", describe_network(net));
  });
}

// All-reduce, all-gather, reduce-scatter and broadcast over rings (one channel per rail when the
// ring spans nodes), or an all-reduce on NVLink SHARP where it applies.
void ring_collective_flows(const Topology& topo, const NetworkProfile& net, CollectiveKind kind,
                           const GangLayout& layout, double m, const NcclTiming* chosen,
                           UsageBuilder& usage, GangFlow& g) {
  const int n = static_cast<int>(layout.ring.size());
  const double nd = static_cast<double>(n);
  const int steps = kind == CollectiveKind::all_reduce ? 2 * (n - 1) : n - 1;
  const GroupPlacement placement = placement_of(layout);
  // The latency, protocol and algorithm the analytical model chooses (`chosen`, from
  // sim/nccl_model.hpp; a broadcast or userbuffers transfer: the ring at its own latency). A
  // protocol that reaches a share of the ring's bus bandwidth puts that much more work on the
  // ring's ports (LL sends a flag with every 4 bytes, LL128 one per 120).
  const double ring_bw = ring_bus_bw(net, placement, false);
  const double factor = kind == CollectiveKind::broadcast ? 1.0 : busbw_factor(kind, n);
  NcclTiming timing;
  timing.latency = comm_latency(net, layout.spans ? LinkClass::network : LinkClass::nvlink, steps);
  timing.seconds_per_byte = factor / ring_bw;
  if (chosen != nullptr) timing = *chosen;
  g.latency = seconds_to_ns(
      timing.latency, [&] { return fmt::format("a comm latency with {}", describe_network(net)); });
  if (timing.algorithm == NcclAlgorithm::nvls) {
    // NVLink SHARP: the switch reduces; each GPU port runs at the NVLS bus bandwidth.
    const double units = net.nvlink_bus_bw / net.nvls_bus_bw;
    std::vector<PortLoad> hop;
    for (int r : layout.ring) {
      topo.path(r, r, units, hop);  // out and in of the GPU's own NVLink port
    }
    usage.add(hop);
    g.work = 2.0 * (nd - 1) / nd * m;
    return;
  }
  add_ring_hops(topo, layout, kind != CollectiveKind::broadcast, usage);
  const double per_hop =
      kind == CollectiveKind::broadcast ? m : static_cast<double>(steps) * m / nd;
  g.work = per_hop / static_cast<double>(layout.channels) *
           (timing.seconds_per_byte / (factor / ring_bw));
}

// The spine loads of a pairwise all-to-all: GPU a sends to and receives from every member on
// another node; those on another leaf than a's, (n - a's node's members) - (members on a's leaf but
// not on a's node), cross a's leaf's spine uplink out and its downlink in, one unit flow each.
void all_to_all_spine(const Topology& topo, const GangLayout& layout, UsageBuilder& usage) {
  const int n = static_cast<int>(layout.ring.size());
  std::map<int, int> on_leaf;
  std::map<std::pair<int, int>, int> on_node_leaf;
  const auto leaf = [&](int r) { return topo.leaf_of(topo.node_of(r), topo.rail_of(r)); };
  for (int r : layout.ring) {
    ++on_leaf[leaf(r)];
    ++on_node_leaf[{topo.node_of(r), leaf(r)}];
  }
  std::vector<PortLoad> hop;
  for (int a : layout.ring) {
    const int l = leaf(a);
    const int remote = n - layout.per_node.at(topo.node_of(a));
    const int crossing = remote - (on_leaf.at(l) - on_node_leaf.at({topo.node_of(a), l}));
    hop.clear();
    topo.leaf_spine_ports(l, static_cast<double>(crossing), static_cast<double>(crossing), hop);
    usage.add(hop);
  }
}

// Pairwise all-to-all: every ordered pair is a unit flow of M/n bytes. Per GPU that is (members on
// its node - 1) unit flows over NVLink and n - (members on its node) through its rail NIC, in each
// direction; with a spine tier, each pair between different leaves also crosses the source leaf's
// spine uplink and the destination leaf's downlink.
void all_to_all_flows(const Topology& topo, const NetworkProfile& net, const GangLayout& layout,
                      double m, UsageBuilder& usage, GangFlow& g) {
  const int n = static_cast<int>(layout.ring.size());
  g.latency = latency_ns(net, layout.spans, 1);
  std::vector<PortLoad> hop;
  for (int a : layout.ring) {
    const int local = layout.per_node.at(topo.node_of(a));
    if (local > 1) {
      hop.clear();
      topo.path(a, a, static_cast<double>(local - 1), hop);
      usage.add(hop);
    }
    if (n > local) {
      hop.clear();
      topo.rail_path(a, a, topo.rail_of(a), topo.rail_of(a), static_cast<double>(n - local), hop);
      usage.add(hop);
    }
  }
  if (topo.has_spine()) all_to_all_spine(topo, layout, usage);
  g.work = m / static_cast<double>(n);
}

// Permute: rank i of the group sends M bytes to rank i + shift (mod n), in the group's order.
void permute_flows(const Topology& topo, const NetworkProfile& net, const std::vector<int>& ranks,
                   int shift, bool spans, double m, UsageBuilder& usage, GangFlow& g) {
  const int n = static_cast<int>(ranks.size());
  g.latency = latency_ns(net, spans, 1);
  std::vector<PortLoad> hop;
  for (int i = 0; i < n; ++i) {
    const int a = ranks[static_cast<std::size_t>(i)];
    const int b = ranks[static_cast<std::size_t>(((i + shift) % n + n) % n)];
    if (a == b) continue;
    hop.clear();
    topo.path(a, b, 1.0, hop);
    usage.add(hop);
  }
  g.work = m;
}

}  // namespace

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
  const double m = static_cast<double>(bytes);
  const GangLayout layout = gang_layout(topo, ranks);
  UsageBuilder usage(topo.port_count());
  const bool over_spine = topo.has_spine() && layout.spans;
  if (algo == CollectiveAlgo::tree && kind == CollectiveKind::all_reduce && over_spine) {
    throw InputError(
        "--spine-oversubscription: the tree all-reduce over a leaf-spine tier is not modelled "
        "(which tree edges cross the spine depends on NCCL's tree layout); use the ring");
  }
  // What the analytical model chooses for this call (algorithm, protocol, latency); over a spine
  // tier the automatic choice leaves the tree out (its flows there are not modelled).
  std::optional<NcclTiming> chosen;
  const bool timed = kind == CollectiveKind::all_reduce || kind == CollectiveKind::all_gather ||
                     kind == CollectiveKind::reduce_scatter || kind == CollectiveKind::barrier;
  if (timed && algo != CollectiveAlgo::userbuffers) {
    const GroupPlacement placement = placement_of(layout);
    chosen = collective_timing(net, kind, placement, bytes, algo,
                               ring_bus_bw(net, placement, false), !over_spine);
  }
  if (chosen && chosen->algorithm == NcclAlgorithm::tree) {
    tree_all_reduce_flows(topo, net, layout, m, *chosen, usage, g);
    g.usage = usage.take();
    return g;
  }
  switch (kind) {
    case CollectiveKind::all_reduce:
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter:
    case CollectiveKind::broadcast:
      ring_collective_flows(topo, net, kind, layout, m, chosen ? &*chosen : nullptr, usage, g);
      break;
    case CollectiveKind::all_to_all:
      all_to_all_flows(topo, net, layout, m, usage, g);
      break;
    case CollectiveKind::permute:
      permute_flows(topo, net, ranks, shift, layout.spans, m, usage, g);
      break;
    case CollectiveKind::barrier:
      g.latency = seconds_to_ns(chosen ? chosen->latency : 0.0, [&] {
        return fmt::format("a barrier latency with {}", describe_network(net));
      });
      break;
  }
  if (algo == CollectiveAlgo::userbuffers) {
    // Transformer Engine's userbuffers: the same flows, one NVLink step of latency
    // (sim/network_analytical.hpp, userbuffers_latency).
    if (layout.spans) {
      throw InputError(fmt::format(
          "a userbuffers {} across nodes: Transformer Engine's userbuffers overlap needs the TP "
          "group inside one NVLink domain",
          to_string(kind)));
    }
    g.latency = seconds_to_ns(userbuffers_latency(net), [&] {
      return fmt::format("a userbuffers latency with {}", describe_network(net));
    });
  }
  g.usage = usage.take();
  return g;
}

namespace {

// A collective's gang, keyed by what it depends on: collectives of one group shape repeat per
// layer and microbatch.
struct GangKey {
  std::vector<int> ranks;
  CollectiveKind kind;
  std::int64_t bytes;
  int shift;
  CollectiveAlgo algo;
  auto operator<=>(const GangKey&) const = default;
};

// Folded programs build only coordinate 0 of their folded dimensions (flow_fold.hpp).
void check_built_ranks(const Program& program, const std::vector<int>& dims) {
  std::vector<char> checked(static_cast<std::size_t>(program.mesh.world_size()), 0);
  for (const auto& op : program.ops) {
    auto& c = checked[static_cast<std::size_t>(op.rank)];
    if (c != 0) continue;
    c = 1;
    const auto coords = program.mesh.coords(op.rank);
    for (int d : dims) {
      if (coords[static_cast<std::size_t>(d)] != 0) {
        throw InputError(fmt::format(
            "flow-level network: a folded Program builds only coordinate 0 of its folded "
            "dimension `{}`, but rank {} has ops",
            program.mesh.dims()[static_cast<std::size_t>(d)].name, op.rank));
      }
    }
  }
}

}  // namespace

FlowPlan plan_flows(const Program& program, const CommPlan& plan, const NetworkProfile& net,
                    const FlowOptions& options) {
  const Topology topo(program.mesh, net, options);
  const std::vector<int> dims = folded_dims(program);
  std::optional<PortFold> fold;
  FlowPlan fp;
  if (!dims.empty()) {
    check_built_ranks(program, dims);
    fold = fold_ports(topo, program.mesh, dims);
    if (!fold) {
      throw InputError(
          "flow-level network: this folded Program has no exact quotient on this topology (GPUs "
          "sharing a NIC or uplink fold onto different ones); build every rank");
    }
    for (PortId p : fold->rep) {
      const auto i = static_cast<std::size_t>(p);
      fp.port_capacity.push_back(topo.capacity()[i]);
      fp.port_names.push_back(topo.names()[i]);
      fp.port_class.push_back(topo.classes()[i]);
    }
    for (double stabilizer : fold->stabilizer) {
      fp.port_multiplicity.push_back(fold->order / stabilizer);  // the orbit's size
    }
  } else {
    fp.port_capacity = topo.capacity();
    fp.port_names = topo.names();
    fp.port_class = topo.classes();
    fp.port_multiplicity.assign(topo.port_count(), 1.0);
  }
  fp.transfers.reserve(plan.transfers.size());
  for (const auto& t : plan.transfers) {
    GangFlow g = p2p_gang(topo, net, t.src, t.dst, t.bytes);
    fp.transfers.push_back(fold ? fold_gang(*fold, g, 1.0) : std::move(g));
  }
  fp.collectives.reserve(plan.collectives.size());
  std::map<GangKey, std::size_t> seen;
  for (const auto& inst : plan.collectives) {
    const auto& call =
        std::get<CollectiveCall>(program.ops[static_cast<std::size_t>(inst.members.front())].body);
    const Group& group = program.groups[static_cast<std::size_t>(inst.group)];
    // A folded group is priced as the whole group it stands for, on its real placement.
    GangKey key{group.timed_as.empty() ? group.ranks : group.timed_as, inst.kind, inst.bytes,
                call.shift, inst.algo};
    const auto it = seen.find(key);
    if (it != seen.end()) {
      fp.collectives.push_back(fp.collectives[it->second]);
      continue;
    }
    GangFlow g = collective_gang(topo, net, key.kind, key.ranks, key.bytes, key.shift, key.algo);
    if (fold) g = fold_gang(*fold, g, rank_set_stabilizer(program.mesh, dims, key.ranks));
    seen.emplace(std::move(key), fp.collectives.size());
    fp.collectives.push_back(std::move(g));
  }
  return fp;
}

}  // namespace meshsim
