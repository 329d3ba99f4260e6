#pragma once
// The analytical network level (ARCHITECTURE.md §3): NCCL-like alpha-beta per collective, the bus
// bandwidth of the bottleneck link class of the group, latency = base + steps x per-step latency
// of the link class the steps cross.
#include <cstdint>
#include <string_view>
#include <vector>

#include "sim/hardware_profile.hpp"
#include "sim/mesh.hpp"
#include "sim/program.hpp"

namespace meshsim {

enum class LinkClass : std::uint8_t { nvlink, network };
std::string_view to_string(LinkClass c);
// NCCL's protocols (sim/nccl_model.hpp): "LL", "LL128", "Simple".
enum class NcclProtocol : std::uint8_t { ll, ll128, simple };
std::string_view to_string(NcclProtocol p);
// The algorithm an all-reduce, all-gather or reduce-scatter runs: "ring", "tree", "NVLS".
enum class NcclAlgorithm : std::uint8_t { ring, tree, nvls };
std::string_view to_string(NcclAlgorithm a);

// Where a group's ranks sit: how many ranks, over how many nodes, and the fewest of them on any
// one node (g in ARCHITECTURE.md §3's bandwidth rule).
struct GroupPlacement {
  int ranks = 1;
  int nodes = 1;
  int min_per_node = 1;
};
GroupPlacement placement_of(const Mesh& mesh, const std::vector<int>& ranks);

struct CommCost {
  double seconds = 0;
  double bus_bw = 0;  // bytes/s the algorithm's bus traffic runs at
  int steps = 0;      // algorithm steps paying per-step latency
  LinkClass link = LinkClass::nvlink;
  NcclAlgorithm algorithm = NcclAlgorithm::ring;
  NcclProtocol protocol = NcclProtocol::simple;
};

// One send/recv of `bytes` between two GPUs.
CommCost p2p_cost(const NetworkProfile& net, bool same_node, std::int64_t bytes);
// One collective over a group placed as given; bytes as in CollectiveCall (nccl-tests convention).
CommCost collective_cost(const NetworkProfile& net, CollectiveKind kind,
                         const GroupPlacement& placement, std::int64_t bytes,
                         CollectiveAlgo algo = CollectiveAlgo::automatic);

// Whether an all-reduce over this placement runs on NVLS: forced by nvls (InputError when the
// group spans nodes or the profile has no NVLS), chosen by automatic inside a node with NVLS.
bool uses_nvls(const NetworkProfile& net, const GroupPlacement& placement, CollectiveAlgo algo);

// The latency of one Transformer Engine userbuffers transfer (CollectiveAlgo::userbuffers): one
// NVLink step of the profile (nvlink_step_latency, NCCL's per-hop Simple-protocol figure on the
// built-ins) without NCCL's base latency: userbuffers registers its buffers once over CUDA IPC
// (TE's initialize_ub) and each ring-exchange step is one copy-engine cudaMemcpyAsync into the
// peer's buffer plus a flag (comm_gemm_overlap/userbuffers/userbuffers.cu, userbuffers_send), not
// a collective call with its protocol set-up.
double userbuffers_latency(const NetworkProfile& net);

// Bus bandwidth of a ring over the group: NVLink inside a node (NVLS for all-reduce where `nvls`);
// across nodes one channel per NIC, so min(NVLink, min(g, NICs) x NIC) with g the fewest group
// members on one node.
double ring_bus_bw(const NetworkProfile& net, const GroupPlacement& p, bool nvls);

// latency = base + steps x per-step latency of the link class the steps cross (seconds).
double comm_latency(const NetworkProfile& net, LinkClass link, int steps);
// The profile's network figures in its own field names and units, for messages about a comm
// duration out of range: "the hardware profile's network.nvlink_bus_gbps 450, ...".
std::string describe_network(const NetworkProfile& net);

// Tree all-reduce latency: base + 2 x (ceil(log2 nodes) network steps + (g - 1) NVLink steps).
double tree_allreduce_latency(const NetworkProfile& net, int nodes, int per_node);

// nccl-tests: busbw = algbw x factor; algbw = bytes / time.
double busbw_factor(CollectiveKind kind, int ranks);
// Bytes one member puts on the wire for one collective (ring algorithms; all-to-all pairwise).
double bytes_sent_per_rank(CollectiveKind kind, int ranks, std::int64_t bytes);

}  // namespace meshsim
