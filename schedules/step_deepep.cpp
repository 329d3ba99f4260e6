// The step builder's DeepEP part (--moe-token-dispatcher flex): the NVLink and RDMA groups of an
// EP group and the fused dispatch / combine all-to-alls (deepseek-ai/DeepEP), their volumes from
// schedules/deepep_volume.
#include <algorithm>

#include "schedules/deepep_volume.hpp"
#include "schedules/step_builder.hpp"

namespace meshsim::step_detail {

// DeepEP's groups for an EP group: the ranks of each node (NVLink) and, when the group spans
// nodes with the same number of its ranks on each, the ranks of this rank's local index on every
// node (RDMA). Per rank and microbatch, of T tokens of h·e bytes: NVLink T · ep · P(rank) copies
// (a token once to each rank holding one of its experts; the node's forwarded ones included),
// RDMA T · nodes · P(node) (once to each node holding one), each as an all-to-all buffer of which
// (n - 1) / n leaves the rank. An EP group spread unevenly over nodes takes the one-level volume.
void StepBuilder::deepep_setup(const std::vector<int>& ep_ranks) {
  const Mesh& mesh = builder_.peek().mesh;
  std::vector<int> nodes, mine;
  for (const int r : ep_ranks) {
    if (std::find(nodes.begin(), nodes.end(), mesh.node_of(r)) == nodes.end()) {
      nodes.push_back(mesh.node_of(r));
    }
    if (mesh.node_of(r) == mesh.node_of(rank_)) mine.push_back(r);
  }
  const int n = static_cast<int>(nodes.size()), per_node = static_cast<int>(mine.size());
  const bool two_level =
      n > 1 && per_node * n == ep_ && std::all_of(nodes.begin(), nodes.end(), [&](int node) {
        return std::count_if(ep_ranks.begin(), ep_ranks.end(),
                             [&](int r) { return mesh.node_of(r) == node; }) == per_node;
      });
  const DeepEpShares share = deepep_shares(*m_.moe, ep_, two_level ? n : 1);
  const double token = static_cast<double>(local_tokens_ * m_.hidden * e_);
  nvl_bytes_ = static_cast<std::int64_t>(std::llround(token * ep_ * share.rank));
  if (!two_level) {
    nvl_group_ = ep_group_;
    rdma_group_ = 0;
    return;
  }
  const auto index = std::find(mine.begin(), mine.end(), rank_) - mine.begin();
  std::vector<int> peers;  // the EP ranks at this local index, one per node
  for (const int node : nodes) {
    int seen = 0;
    for (const int r : ep_ranks) {
      if (mesh.node_of(r) == node && seen++ == index) peers.push_back(r);
    }
  }
  nvl_group_ = expert_group("ep", mine);
  rdma_group_ = expert_group("ep", peers);
  rdma_bytes_ = static_cast<std::int64_t>(std::llround(token * n * share.node));
  if (ep_nvl_comm_ < 0) ep_nvl_comm_ = builder_.stream("ep_nvl_comm");
}

// flex's dispatch (to_experts) or combine. Over nodes the RDMA and NVLink all-to-alls run
// together on two streams, as DeepEP's one kernel pipelines its RDMA senders and NVLink
// forwarders; what follows waits for both.
void StepBuilder::deepep_all_to_all(const Ctx& c, const std::string& name, bool to_experts,
                                    bool yield) {
  if (rdma_group_ == 0) {
    moe_collective(c, name + " all-to-all", CollectiveKind::all_to_all, nvl_group_, nvl_bytes_,
                   yield);
    return;
  }
  const std::vector<OpId> pending = take_waits();
  const auto stage = [&](const std::string& link, GroupId g, std::int64_t bytes, StreamId st) {
    waits_ = pending;
    const OpId op = moe_collective(c, name + " " + link + " all-to-all", CollectiveKind::all_to_all,
                                   g, bytes, false, st);
    waits_.clear();
    return op;
  };
  const bool rdma_first = to_experts;  // dispatch: RDMA, then the forward over NVLink
  const OpId a = rdma_first ? stage("rdma", rdma_group_, rdma_bytes_, ep_comm_)
                            : stage("nvlink", nvl_group_, nvl_bytes_, ep_nvl_comm_);
  const OpId b = rdma_first ? stage("nvlink", nvl_group_, nvl_bytes_, ep_nvl_comm_)
                            : stage("rdma", rdma_group_, rdma_bytes_, ep_comm_);
  wait(a);
  wait(b);
  if (yield) yield_to_pair();
}

}  // namespace meshsim::step_detail
