#include "schedules/deepep_volume.hpp"

#include <algorithm>
#include <vector>

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

double expert_set_miss(const MoeBlock& moe, int first, int size) {
  const int groups = moe.router_groups > 0 ? moe.router_groups : 1;
  const int chosen = moe.router_groups > 0 ? moe.router_group_topk : 1;
  const int per_group = moe.experts / groups;
  if (size < 1 || first < 0 || first + size > moe.experts) {
    throw InputError(fmt::format("experts {} to {} of {}: outside the layer's experts", first,
                                 first + size - 1, moe.experts));
  }
  // The groups the set touches and how many of its experts lie in each.
  std::vector<int> overlap;
  for (int g = first / per_group; g * per_group < first + size; ++g) {
    overlap.push_back(std::min(first + size, (g + 1) * per_group) - std::max(first, g * per_group));
  }
  const int touched = static_cast<int>(overlap.size());
  if (static_cast<double>(touched + 1) * (size + 1) > 5e7) {
    throw InputError(fmt::format(
        "moe.router_groups: {} groups of {} experts are too many for DeepEP's volume (a set of "
        "{} experts touches {})",
        groups, per_group, size, touched));
  }
  // ways[j][o]: subsets of j touched groups holding o of the set's experts.
  std::vector<std::vector<double>> ways(static_cast<std::size_t>(touched) + 1,
                                        std::vector<double>(static_cast<std::size_t>(size) + 1));
  ways[0][0] = 1;
  for (const int o : overlap) {
    for (int j = touched - 1; j >= 0; --j) {
      for (int have = size - o; have >= 0; --have) {
        ways[static_cast<std::size_t>(j) + 1][static_cast<std::size_t>(have + o)] +=
            ways[static_cast<std::size_t>(j)][static_cast<std::size_t>(have)];
      }
    }
  }
  // The chosen groups: j of the touched ones and chosen - j of the others, uniformly; then the
  // top_k draws from the chosen groups' experts miss the o set experts among them.
  const int pool = chosen * per_group;
  double miss = 0;
  for (int j = 0; j <= std::min(touched, chosen); ++j) {
    const double rest = binomial(groups - touched, chosen - j) / binomial(groups, chosen);
    if (rest == 0) continue;
    for (int o = 0; o <= size; ++o) {
      const double w = ways[static_cast<std::size_t>(j)][static_cast<std::size_t>(o)];
      if (w > 0) miss += w * rest * draws_miss(pool, o, moe.top_k);
    }
  }
  return miss;
}

double expected_sets_reached(const MoeBlock& moe, int sets) {
  const int size = moe.experts / sets;
  double reached = 0;
  for (int i = 0; i < sets; ++i) reached += 1 - expert_set_miss(moe, i * size, size);
  return reached;
}

DeepEpShares deepep_shares(const MoeBlock& moe, int ep, int nodes) {
  return DeepEpShares{expected_sets_reached(moe, ep) / ep,
                      expected_sets_reached(moe, nodes) / nodes};
}

}  // namespace meshsim
