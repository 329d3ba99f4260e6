#pragma once
// How many copies of a token DeepEP's dispatch moves (the `flex` dispatcher), under uniform
// routing. DeepEP (deepseek-ai/DeepEP, csrc/kernels/internode.cu and intranode.cu) sends a token
// once to every EP rank that holds at least one of its top_k experts, not once per expert; across
// nodes it sends one copy over RDMA to each other node holding such a rank (to the GPU of the same
// local index) and that GPU forwards it over NVLink to the ranks of its node that need it. The
// combine is the reverse (summed within the node over NVLink first, one copy per node back over
// RDMA). Experts sit on EP ranks in order (E / ep each), EP ranks on nodes in order.
//
// Under uniform routing a token's top_k experts are drawn without replacement from the E experts,
// or with group-limited routing (MoeBlock::router_groups G, router_group_topk g) from the experts
// of g of the G groups, each group equally likely (Megatron-Core's group_limited_topk under
// balanced scores). The probability that a set of experts holds none of the token's experts is
// hypergeometric; the sets used here are a rank's E / ep experts and a node's E / nodes experts.
#include "schedules/moe_model.hpp"

namespace meshsim {

// Probability that a token routed by `moe` has none of its experts among the `size` experts
// first, first + 1, ...: the token's groups are g of the G chosen uniformly, j of them among those
// the set touches, then k draws from the g·E/G experts of the chosen groups miss the set's experts
// in them (hypergeometric). Not group-limited: one group of all E experts.
double expert_set_miss(const MoeBlock& moe, int first, int size);
// Of the `sets` equal runs of consecutive experts (E / sets each), how many a token reaches on
// average: the sum of 1 - expert_set_miss over them.
double expected_sets_reached(const MoeBlock& moe, int sets);

struct DeepEpShares {
  double rank = 0;  // a token reaches an EP rank (averaged over the ranks)
  double node = 0;  // a token reaches a node of the EP group (averaged over the nodes)
};
// The shares for an EP group of `ep` ranks over `nodes` nodes (ep / nodes ranks on each).
DeepEpShares deepep_shares(const MoeBlock& moe, int ep, int nodes);

}  // namespace meshsim
