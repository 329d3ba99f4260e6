#pragma once
// The network between nodes that a published run's cluster prints: `cluster.inter_node_gbps`,
// Gb/s per node (fms-fsdp's "A100 80G 128 GPUs with 400Gbps"). meshsim's profiles assume the
// reference systems' NICs (a100-sxm 8 x 24 GB/s, h100-sxm 8 x 48 GB/s per node); a cluster built
// with less gets its own figure, shared evenly by the profile's NICs.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/hardware_profile.hpp"

namespace meshsim {

// When `cluster` gives inter_node_gbps (a positive number): the profile's NIC bandwidth becomes
// inter_node_gbps x 1e9 / 8 x 0.96 / nics_per_node bytes/s (the share of line rate the built-in
// profiles' NICs achieve: 24 of HDR's 25 GB/s, 48 of NDR's 50), its `network.nic_gbps` source says
// so, and a note names the figure. Absent or null: nothing changes. Anything else throws InputError
// naming the field.
void apply_cluster_network(const nlohmann::json& cluster, HardwareProfile& hw,
                           std::vector<std::string>& notes);

}  // namespace meshsim
