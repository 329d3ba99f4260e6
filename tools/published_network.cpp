#include "tools/published_network.hpp"

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {

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
  hw.network.nic_bw = gbps * 1e9 / 8.0 / nics;
  hw.sources["network.nic_gbps"] = fmt::format(
      "the published run's cluster: {:g} Gb/s between nodes per node, over {} NICs", gbps, nics);
  notes.push_back(fmt::format(
      "network between nodes {:g} Gb/s per node as the cluster prints ({} NICs of {:g} GB/s)", gbps,
      nics, hw.network.nic_bw / 1e9));
}

}  // namespace meshsim
