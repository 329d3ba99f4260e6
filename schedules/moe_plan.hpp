#pragma once
// Expert parallelism of a training step (ARCHITECTURE.md §4.4): the MoE part of a StepPlan (ep,
// etp, token dispatcher, routing skew, capacity factor), Megatron-Core's
// MoE parallel folding (the expert groups on the ranks) and the tokens each expert receives.
//
// Parallel folding (Megatron-Core's RankGenerator, "MoE Parallel Folding", Liu et al. 2025):
// attention runs on tp x cp x dp x pp (tp fastest), experts on etp x ep x edp x pp over the same
// ranks (etp fastest, then ep, then edp), edp = tp·cp·dp / (etp·ep). A rank at position i of its
// pipeline stage (i = tp + t·(cp + c·dp)) has expert coordinates etp index i mod etp, ep index
// (i / etp) mod ep, edp index i / (etp·ep); the EP group of a rank is the ep ranks that differ
// from it only in the ep index, and so on.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schedules/model_catalog.hpp"

namespace meshsim {

// Megatron-Core's --moe-token-dispatcher-type: alltoall (permute, all-to-all over EP, all-gather
// over ETP; the reverse to combine), allgather (all-gather the tokens over the EP x ETP group,
// each rank keeps those of its experts, reduce-scatter back), flex (DeepEP's fused dispatch and
// combine kernels: the all-to-all volume without separate permute copies).
enum class TokenDispatcher : std::uint8_t { alltoall, allgather, flex };
std::string_view to_string(TokenDispatcher d);
std::optional<TokenDispatcher> parse_token_dispatcher(std::string_view s);

// How the router spreads token copies over the E routed experts: uniform (1/E each), zipf with
// exponent s (expert j gets a share proportional to 1 / (j + 1)^s) or a table of tokens per
// expert (any non-negative numbers, normalised). Experts sit on EP ranks in order (expert j on
// ep index j / (E / ep)), as Megatron places local experts.
struct Routing {
  enum class Kind : std::uint8_t { uniform, zipf, table };
  Kind kind = Kind::uniform;
  double zipf_s = 0;
  std::vector<double> tokens_per_expert;  // table
  std::string origin;                     // "uniform", "zipf:1.2" or the file
  bool operator==(const Routing&) const = default;
};
// "uniform", "zipf:S" or a JSON file {"tokens_per_expert": [...]}; InputError naming `routing`.
Routing parse_routing(std::string_view text);

struct MoePlan {
  int ep = 1;
  int etp = 0;  // expert tensor parallel; 0: = tp (Megatron's default)
  TokenDispatcher dispatcher = TokenDispatcher::alltoall;
  Routing routing;
  // Megatron's --moe-expert-capacity-factor: each expert takes at most cf · T·k / E token copies
  // (T·k those of its EP group), the rest are dropped; 0: no capacity, nothing dropped.
  double capacity_factor = 0;
  // --overlap-moe-comm: in each overlapped pair the forward of one microbatch (or chunk) and the
  // backward of another are emitted interleaved, switching at every EP collective, so each
  // all-to-all runs beside the other part's compute. On dualpipev its own pairs (DualPipe); on
  // 1f1b (pp 1) and interleaved Megatron-Core's combined 1F1B (PipelineShape::combined_1f1b).
  bool overlap_comm = false;
  // Megatron's --delay-wgrad-compute (with the combined 1F1B): an MoE layer's expert weight
  // gradients run after the dispatch backward's all-to-all is launched, which then waits only for
  // the input gradients (fine_grained_callables: mlp.backward_dw after mlp.backward).
  bool delay_wgrad = false;
  // Megatron's --moe-shared-expert-overlap (alltoall dispatcher; megatron/core/transformer/moe/
  // shared_experts.py, SharedExpertMLP on its own CUDA stream): the shared experts' up GEMM and
  // activation run while the dispatch all-to-all moves, their down GEMM while the combine's does;
  // in the backward their gradients run while the combine's backward all-to-all moves (their
  // autograd nodes are scheduled first, set_tensor_grad_fn_sequence_sr). Without it the shared
  // experts run after the combine (forward) and before it (backward), beside no all-to-all.
  bool shared_expert_overlap = false;
  bool operator==(const MoePlan&) const = default;
};

// Expert groups of a rank of the tp x cp x dp x pp mesh (sorted, the rank included).
struct ExpertGroups {
  std::vector<int> ep, etp, edp;
  std::vector<int> ep_etp;  // the etp x ep ranks sharing the edp index (allgather dispatcher)
  int ep_index = 0;
};
ExpertGroups expert_groups(int rank, int tp, int cp, int dp, int etp, int ep);
// Whether every EP and ETP group of a pipeline stage lies on the nodes (gpus_per_node GPUs each,
// ranks in order) as every other one of that stage does (the same number of members on each of
// its nodes): folding builds one of them for all (ARCHITECTURE.md §2), exact only then.
bool expert_groups_fold_evenly(int tp, int cp, int dp, int pp, int etp, int ep, int gpus_per_node);

// Token copies each expert of a MoE layer receives, per microbatch, for an EP group whose ranks
// each route `tokens` tokens to top_k experts: shares from the routing, capped by the capacity.
struct ExpertLoad {
  std::vector<double> tokens;  // per expert, after dropping
  double dropped = 0;          // token copies dropped per microbatch (over the EP group)
  // The busiest EP rank's token copies over the mean (1 = balanced).
  double imbalance = 1;
  // Token copies received by each EP rank (sum over its local experts).
  std::vector<double> per_rank;
};
ExpertLoad expert_load(const MoeBlock& moe, const MoePlan& plan, std::int64_t tokens);

// The rules (InputError naming the flag field): ep x etp divides tp x cp x dp, experts divisible
// by ep, expert_ffn by etp, sequence parallel when tp > 1, a dense model takes ep = etp = 1.
void check_moe_plan(const TransformerModel& model, const MoePlan& moe, int tp, int cp, int dp,
                    bool sequence_parallel);
int expert_tp(const MoePlan& moe, int tp);  // etp, or tp when unset

}  // namespace meshsim
