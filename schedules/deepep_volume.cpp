#include "schedules/deepep_volume.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {
namespace {

// C(n, r) as a double (r small enough here: groups and top_k).
double binomial(int n, int r) {
  if (r < 0 || r > n) return 0;
  double out = 1;
  for (int i = 1; i <= r; ++i) out = out * (n - r + i) / i;
  return out;
}

// Probability that k draws without replacement from a pool of n miss a subset of s of them:
// C(n - s, k) / C(n, k) = prod_{i < k} (n - s - i) / (n - i).
double draws_miss(int n, int s, int k) {
  double out = 1;
  for (int i = 0; i < k; ++i) {
    const int left = n - s - i;
    if (left <= 0) return 0;
    out *= static_cast<double>(left) / (n - i);
  }
  return out;
}

}  // namespace

double expert_set_miss(const MoeBlock& moe, int set) {
  const int groups = moe.router_groups > 0 ? moe.router_groups : 1;
  const int chosen = moe.router_groups > 0 ? moe.router_group_topk : 1;
  const int per_group = moe.experts / groups;
  if (set < 1 || moe.experts % set != 0 || (per_group % set != 0 && set % per_group != 0)) {
    throw InputError(
        fmt::format("a set of {} experts does not align with {} router groups of {} experts", set,
                    groups, per_group));
  }
  const int pool = chosen * per_group;  // the experts of the chosen groups
  const double p_group = static_cast<double>(chosen) / groups;
  if (set <= per_group) {
    // Inside one group: missed when the group is not chosen, or chosen and no draw lands in it.
    return (1 - p_group) + p_group * draws_miss(pool, set, moe.top_k);
  }
  // q whole groups: j of them chosen (hypergeometric over the groups), then no draw in them.
  const int q = set / per_group;
  double miss = 0;
  for (int j = 0; j <= std::min(q, chosen); ++j) {
    const double pj = binomial(q, j) * binomial(groups - q, chosen - j) / binomial(groups, chosen);
    miss += pj * draws_miss(pool, j * per_group, moe.top_k);
  }
  return miss;
}

DeepEpShares deepep_shares(const MoeBlock& moe, int ep, int nodes) {
  return DeepEpShares{1 - expert_set_miss(moe, moe.experts / ep),
                      1 - expert_set_miss(moe, moe.experts / nodes)};
}

}  // namespace meshsim
