// Expert parallelism's rules and Megatron-Core's parallel folding (schedules/moe_plan.hpp).
#include "schedules/moe_plan.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include <fmt/format.h>

#include "sim/enum_names.hpp"
#include "sim/error.hpp"

namespace meshsim {

namespace {
constexpr std::array<std::string_view, 3> kDispatcherNames = {"alltoall", "allgather", "flex"};
}  // namespace

std::string_view to_string(TokenDispatcher d) {
  return enum_name(kDispatcherNames, d);
}
std::optional<TokenDispatcher> parse_token_dispatcher(std::string_view s) {
  return parse_enum_name<TokenDispatcher>(kDispatcherNames, s);
}

int expert_tp(const MoePlan& moe, int tp) {
  return moe.etp > 0 ? moe.etp : tp;
}

ExpertGroups expert_groups(int rank, int tp, int cp, int dp, int etp, int ep) {
  const int stage_size = tp * cp * dp;
  const int base = rank / stage_size * stage_size;
  const int i = rank % stage_size;
  const int e_t = i % etp, e_p = (i / etp) % ep, e_d = i / (etp * ep);
  const int edp = stage_size / (etp * ep);
  ExpertGroups g;
  g.ep_index = e_p;
  for (int q = 0; q < ep; ++q) g.ep.push_back(base + e_t + etp * (q + ep * e_d));
  for (int q = 0; q < etp; ++q) g.etp.push_back(base + q + etp * (e_p + ep * e_d));
  for (int q = 0; q < edp; ++q) g.edp.push_back(base + e_t + etp * (e_p + ep * q));
  for (int q = 0; q < etp * ep; ++q) g.ep_etp.push_back(base + q + etp * ep * e_d);
  return g;
}

namespace {
// The members of `ranks` per node, sorted: where a group lies, up to which nodes.
std::vector<int> node_counts(const std::vector<int>& ranks, int gpus_per_node) {
  std::vector<int> nodes, counts;
  for (const int r : ranks) {
    const int n = r / gpus_per_node;
    const auto it = std::find(nodes.begin(), nodes.end(), n);
    if (it == nodes.end()) {
      nodes.push_back(n);
      counts.push_back(1);
    } else {
      ++counts[static_cast<std::size_t>(it - nodes.begin())];
    }
  }
  std::sort(counts.begin(), counts.end());
  return counts;
}
}  // namespace

bool expert_groups_fold_evenly(int tp, int cp, int dp, int pp, int etp, int ep, int gpus_per_node) {
  const int stage = tp * cp * dp;
  for (int s = 0; s < pp; ++s) {
    std::vector<int> ep_shape, etp_shape;
    for (int i = 0; i < stage; ++i) {
      const ExpertGroups g = expert_groups(s * stage + i, tp, cp, dp, etp, ep);
      std::vector<int> a = node_counts(g.ep, gpus_per_node), b = node_counts(g.etp, gpus_per_node);
      if (i == 0) {
        ep_shape = std::move(a);
        etp_shape = std::move(b);
      } else if (a != ep_shape || b != etp_shape) {
        return false;
      }
    }
  }
  return true;
}

void check_moe_plan(const TransformerModel& m, const MoePlan& moe, int tp, int cp, int dp,
                    bool sequence_parallel) {
  const int etp = expert_tp(moe, tp);
  if (!m.moe) {
    if (moe.ep != 1 || (moe.etp != 0 && moe.etp != tp)) {
      throw InputError(
          fmt::format("`ep` and `etp` need a model with MoE layers; {} is dense", m.name));
    }
    if (moe.routing.kind != Routing{}.kind || moe.capacity_factor > 0 ||
        moe.dispatcher != MoePlan{}.dispatcher) {
      throw InputError(fmt::format(
          "`routing`, `moe_capacity_factor` and `moe_token_dispatcher` need a model with MoE "
          "layers; {} is dense",
          m.name));
    }
    return;
  }
  if (moe.ep < 1 || etp < 1) throw InputError("`ep` and `etp` must be >= 1");
  const std::int64_t stage = std::int64_t{tp} * cp * dp;
  if (stage % (std::int64_t{etp} * moe.ep) != 0) {
    throw InputError(fmt::format(
        "`ep` x `etp` = {} x {} must divide `tp` x `cp` x `dp` = {} (experts fold onto the "
        "attention ranks of each pipeline stage: edp = tp·cp·dp / (etp·ep))",
        moe.ep, etp, stage));
  }
  if (m.moe->experts % moe.ep != 0) {
    throw InputError(fmt::format("`ep` {} must divide the {} routed experts of {}", moe.ep,
                                 m.moe->experts, m.name));
  }
  if (m.moe->expert_ffn % etp != 0) {
    throw InputError(fmt::format("`etp` {} must divide the expert FFN size {} of {}", etp,
                                 m.moe->expert_ffn, m.name));
  }
  if (tp > 1 && !sequence_parallel) {
    throw InputError(
        "`sequence_parallel` must stay on with MoE layers and tp > 1 (Megatron-Core requires "
        "it: the dispatcher routes each rank's own tokens)");
  }
  if (moe.capacity_factor < 0) throw InputError("`moe_capacity_factor` must be >= 0");
}

}  // namespace meshsim
