#include "sim/comm_volume.hpp"

#include <iterator>
#include <variant>

#include "sim/network_analytical.hpp"
#include "sim/step_metrics.hpp"

namespace meshsim {

std::vector<double> comm_bytes_per_rank(const Program& p) {
  constexpr std::size_t kDims = std::size(kCommDims);
  std::vector<double> sum(kDims, 0.0);
  std::vector<bool> active(static_cast<std::size_t>(p.world_size()), false);
  for (const Op& op : p.ops) {
    active[static_cast<std::size_t>(op.rank)] = true;
    double bytes = 0;
    if (const auto* c = std::get_if<CollectiveCall>(&op.body)) {
      const Group& g = p.groups[static_cast<std::size_t>(c->group)];
      const int n = static_cast<int>(g.timed_as.empty() ? g.ranks.size() : g.timed_as.size());
      bytes = bytes_sent_per_rank(c->kind, n, c->bytes);
    } else if (const auto* x = std::get_if<P2PCall>(&op.body)) {
      for (const Transfer& t : x->sends) bytes += static_cast<double>(t.bytes);
    } else {
      continue;
    }
    const std::string dim = comm_dim(p, op);
    std::size_t at = 0;  // dimensions outside kCommDims count with the first, as time_breakdown
    for (std::size_t i = 0; i < kDims; ++i) {
      if (kCommDims[i] == dim) at = i;
    }
    sum[at] += bytes;
  }
  std::size_t ranks = 0;
  for (const bool a : active) ranks += a ? 1 : 0;
  if (ranks > 0) {
    for (double& s : sum) s /= static_cast<double>(ranks);
  }
  return sum;
}

}  // namespace meshsim
