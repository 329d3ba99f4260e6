#include "tools/published_network.hpp"

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {
namespace {

// The share of a NIC's line rate the built-in profiles take as achieved: 24 GB/s of HDR's 25
// (200 Gb/s), 48 of NDR's 50 (400 Gb/s) (sim/builtin_hardware.cpp, network.nic_gbps sources).
constexpr double kAchievedShareOfLineRate = 0.96;

}  // namespace

void apply_cluster_network(const nlohmann::json& cluster, HardwareProfile& hw,
                           std::vector<std::string>& notes) {
  if (!cluster.is_object() || !cluster.contains("inter_node_gbps")) return;
  const nlohmann::json& v = cluster.at("inter_node_gbps");
  if (v.is_null()) return;
  if (!v.is_number() || !(v.get<double>() > 0)) {
    throw InputError(fmt::format(
        "field 'cluster.inter_node_gbps': expected a positive number (Gb/s per node), got {}",
        v.dump()));
  }
  const double gbps = v.get<double>();
  const int nics = hw.network.nics_per_node;
  hw.network.nic_bw = gbps * 1e9 / 8.0 * kAchievedShareOfLineRate / nics;
  hw.sources["network.nic_gbps"] = fmt::format(
      "the published run's cluster: {:g} Gb/s between nodes per node, over {} NICs, 0.96 of it "
      "achieved (as the built-in profiles' NICs)",
      gbps, nics);
  notes.push_back(fmt::format(
      "network between nodes {:g} Gb/s per node as the cluster prints ({} NICs of {:g} GB/s)", gbps,
      nics, hw.network.nic_bw / 1e9));
}

}  // namespace meshsim
