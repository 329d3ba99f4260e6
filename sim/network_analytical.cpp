#include "sim/network_analytical.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "sim/nccl_model.hpp"

namespace meshsim {
namespace {

double step_latency(const NetworkProfile& net, LinkClass link) {
  return link == LinkClass::network ? net.network_step_latency : net.nvlink_step_latency;
}

// latency = base + steps x per-step latency of the link class the steps cross.
double latency(const NetworkProfile& net, LinkClass link, int steps) {
  return net.base_latency + static_cast<double>(steps) * step_latency(net, link);
}

}  // namespace

double ring_bus_bw(const NetworkProfile& net, const GroupPlacement& p, bool nvls) {
  if (p.nodes <= 1) return nvls ? net.nvls_bus_bw : net.nvlink_bus_bw;
  const int channels = std::min(p.min_per_node, net.nics_per_node);
  return std::min(net.nvlink_bus_bw, static_cast<double>(channels) * net.nic_bw);
}

bool uses_nvls(const NetworkProfile& net, const GroupPlacement& placement, CollectiveAlgo algo) {
  const bool available = placement.nodes <= 1 && net.nvls_bus_bw > 0;
  if (algo == CollectiveAlgo::nvls && !available) {
    throw InputError(
        "an NVLS all-reduce needs its group inside one node and a hardware profile with "
        "network.nvls_bus_gbps > 0");
  }
  return algo == CollectiveAlgo::nvls || (algo == CollectiveAlgo::automatic && available);
}

double tree_allreduce_latency(const NetworkProfile& net, int nodes, int per_node) {
  int depth = 0;
  while ((1 << depth) < nodes) ++depth;
  return net.base_latency +
         2.0 * (static_cast<double>(depth) * net.network_step_latency +
                static_cast<double>(std::max(per_node, 1) - 1) * net.nvlink_step_latency);
}

double userbuffers_latency(const NetworkProfile& net) {
  return net.nvlink_step_latency;
}

double comm_latency(const NetworkProfile& net, LinkClass link, int steps) {
  return latency(net, link, steps);
}

std::string_view to_string(LinkClass c) {
  return c == LinkClass::network ? "network" : "nvlink";
}

std::string_view to_string(NcclAlgorithm a) {
  switch (a) {
    case NcclAlgorithm::tree:
      return "tree";
    case NcclAlgorithm::nvls:
      return "NVLS";
    case NcclAlgorithm::ring:
      break;
  }
  return "ring";
}

std::string_view to_string(NcclProtocol p) {
  switch (p) {
    case NcclProtocol::ll:
      return "LL";
    case NcclProtocol::ll128:
      return "LL128";
    case NcclProtocol::simple:
      break;
  }
  return "Simple";
}

GroupPlacement placement_of(const Mesh& mesh, const std::vector<int>& ranks) {
  if (ranks.empty()) return GroupPlacement{0, 0, 0};
  std::map<int, int> per_node;
  for (int r : ranks) ++per_node[mesh.node_of(r)];
  int fewest = static_cast<int>(ranks.size());
  for (const auto& [node, count] : per_node) fewest = std::min(fewest, count);
  return GroupPlacement{static_cast<int>(ranks.size()), static_cast<int>(per_node.size()), fewest};
}

namespace {

// The profile as it applies to operation `op` on `link`: its calibrated figures for that pair
// replace the base latency, the class's step latency and its bandwidth; nullopt when it has none.
std::optional<NetworkProfile> calibrated_for(const NetworkProfile& net, std::string_view op,
                                             LinkClass link) {
  if (net.calibrated.empty()) return std::nullopt;
  const auto it = net.calibrated.find(fmt::format("{}.{}", op, to_string(link)));
  if (it == net.calibrated.end()) return std::nullopt;
  NetworkProfile eff;
  eff.nvlink_bus_bw = net.nvlink_bus_bw;
  eff.nic_bw = net.nic_bw;
  eff.nics_per_node = net.nics_per_node;
  eff.nvlink_step_latency = net.nvlink_step_latency;
  eff.network_step_latency = net.network_step_latency;
  eff.base_latency = it->second.base_latency;
  if (link == LinkClass::nvlink) {
    eff.nvlink_step_latency = it->second.step_latency;
    eff.nvlink_bus_bw = it->second.bw;
  } else {
    eff.network_step_latency = it->second.step_latency;
    eff.nic_bw = it->second.bw;
  }
  return eff;  // no NVLS figure: the measurement is what the operation reached
}

}  // namespace

CommCost p2p_cost(const NetworkProfile& net, bool same_node, std::int64_t bytes) {
  if (auto eff = calibrated_for(net, "p2p", same_node ? LinkClass::nvlink : LinkClass::network)) {
    return p2p_cost(*eff, same_node, bytes);
  }
  MESHSIM_CHECK(bytes >= 0, fmt::format("p2p transfer of {} bytes", bytes));
  CommCost c;
  c.link = same_node ? LinkClass::nvlink : LinkClass::network;
  c.bus_bw = same_node ? net.nvlink_bus_bw : net.nic_bw;
  c.steps = 1;
  c.seconds = latency(net, c.link, c.steps) + static_cast<double>(bytes) / c.bus_bw;
  return c;
}

namespace {

// A userbuffers transfer inside one NVLink domain: one step of userbuffers_latency; a permute
// (one ring-exchange step) moves M over the GPU's NVLink, an all-gather or reduce-scatter
// (TE's SM-based userbuffers kernels) (n-1)/n M at the NVLink bus bandwidth.
CommCost userbuffers_cost(const NetworkProfile& net, CollectiveKind kind,
                          const GroupPlacement& placement, std::int64_t bytes) {
  if (placement.nodes > 1) {
    throw InputError(fmt::format(
        "a userbuffers {} over {} nodes: Transformer Engine's userbuffers overlap needs the TP "
        "group inside one NVLink domain",
        to_string(kind), placement.nodes));
  }
  CommCost c;
  const double nd = static_cast<double>(placement.ranks);
  const double m = static_cast<double>(bytes);
  c.link = LinkClass::nvlink;
  c.bus_bw = net.nvlink_bus_bw;
  c.steps = 1;
  const double moved = kind == CollectiveKind::permute ? m : (nd - 1) / nd * m;
  c.seconds = userbuffers_latency(net) + moved / c.bus_bw;
  return c;
}

}  // namespace

CommCost collective_cost(const NetworkProfile& net, CollectiveKind kind,
                         const GroupPlacement& placement, std::int64_t bytes, CollectiveAlgo algo) {
  MESHSIM_CHECK(bytes >= 0, fmt::format("{} of {} bytes", to_string(kind), bytes));
  CommCost c;
  const int n = placement.ranks;
  if (n <= 1) return c;  // a group of one rank moves nothing
  if (algo == CollectiveAlgo::userbuffers) return userbuffers_cost(net, kind, placement, bytes);
  c.link = placement.nodes > 1 ? LinkClass::network : LinkClass::nvlink;
  if (auto eff = calibrated_for(net, to_string(kind), c.link)) {
    return collective_cost(*eff, kind, placement, bytes, algo);
  }
  const double nd = static_cast<double>(n);
  const double m = static_cast<double>(bytes);
  switch (kind) {
    case CollectiveKind::all_reduce:
    case CollectiveKind::barrier:
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter: {
      // Ring all-reduce: 2(n-1) steps, lat + 2(n-1)/n * M / B (a barrier is one of 0 bytes); ring
      // all-gather and reduce-scatter: n-1 steps, lat + (n-1)/n * M_total / B; NCCL's tree
      // all-reduce: lat + 2M / B_tree; NVLS. Which one, its latency, protocol and bandwidth as the
      // profile's collective model says (sim/nccl_model.hpp).
      const double payload = kind == CollectiveKind::barrier ? 0.0 : m;
      const NcclTiming t =
          collective_timing(net, kind, placement, bytes, algo, ring_bus_bw(net, placement, false));
      c.bus_bw = t.bus_bw;
      c.steps = t.steps;
      c.protocol = t.protocol;
      c.algorithm = t.algorithm;
      c.seconds = t.latency + payload * t.seconds_per_byte;
      return c;
    }
    case CollectiveKind::broadcast:
      // Pipelined ring: n-1 steps, lat + M / B.
      c.bus_bw = ring_bus_bw(net, placement, false);
      c.steps = n - 1;
      c.seconds = latency(net, c.link, c.steps) + m / c.bus_bw;
      return c;
    case CollectiveKind::all_to_all: {
      // Pairwise, one step: each rank sends (g-1)/n of M_total over NVLink and (n-g)/n over its
      // share of the node's NICs, nic_bw x min(1, NICs / g); the slower part bounds the time.
      // Written as one effective bus bandwidth B: time = lat + (n-1)/n * M / B.
      c.steps = 1;
      if (placement.nodes <= 1) {
        c.bus_bw = net.nvlink_bus_bw;
      } else {
        const double g = static_cast<double>(placement.min_per_node);
        const double nic_share =
            net.nic_bw * std::min(1.0, static_cast<double>(net.nics_per_node) / g);
        const double seconds_per_byte = std::max((g - 1) / net.nvlink_bus_bw, (nd - g) / nic_share);
        c.bus_bw = (nd - 1) / seconds_per_byte;
      }
      c.seconds = latency(net, c.link, c.steps) + (nd - 1) / nd * m / c.bus_bw;
      return c;
    }
    case CollectiveKind::permute:
      // Each rank sends its whole buffer to one peer: one step, lat + M / B_link.
      c.bus_bw = placement.nodes > 1 ? net.nic_bw : net.nvlink_bus_bw;
      c.steps = 1;
      c.seconds = latency(net, c.link, c.steps) + m / c.bus_bw;
      return c;
  }
  MESHSIM_CHECK(false, "unknown collective kind");
  return c;
}

double busbw_factor(CollectiveKind kind, int ranks) {
  if (ranks <= 0) return 0;
  const double n = static_cast<double>(ranks);
  switch (kind) {
    case CollectiveKind::all_reduce:
      return 2.0 * (n - 1) / n;
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter:
    case CollectiveKind::all_to_all:
      return (n - 1) / n;
    case CollectiveKind::broadcast:
    case CollectiveKind::permute:
      return 1.0;
    case CollectiveKind::barrier:
      return 0.0;
  }
  return 0.0;
}

double bytes_sent_per_rank(CollectiveKind kind, int ranks, std::int64_t bytes) {
  if (ranks <= 1) return 0;
  const double m = static_cast<double>(bytes);
  switch (kind) {
    case CollectiveKind::broadcast:  // ring pipeline: every rank but the last forwards M
    case CollectiveKind::permute:
      return m;
    default:
      return busbw_factor(kind, ranks) * m;
  }
}

std::string describe_network(const NetworkProfile& net) {
  return fmt::format(
      "the hardware profile's network.nvlink_bus_gbps {:g}, network.nvls_bus_gbps {:g}, "
      "network.nic_gbps {:g}, network.base_latency_us {:g}",
      net.nvlink_bus_bw / 1e9, net.nvls_bus_bw / 1e9, net.nic_bw / 1e9, net.base_latency * 1e6);
}

}  // namespace meshsim
