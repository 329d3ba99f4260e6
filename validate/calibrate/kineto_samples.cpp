#include "validate/calibrate/kineto_samples.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "traces/kineto_ops.hpp"
#include "validate/run/microbench_stats.hpp"

namespace meshsim {
namespace {

// "Process Group Ranks": "[0, 1, 2]" (a string, as PyTorch records it) or an array.
std::vector<int> group_ranks(const KinetoTrace& trace, const KinetoKernel& kernel) {
  std::vector<int> ranks;
  for (auto it = kernel.stack.rbegin(); it != kernel.stack.rend(); ++it) {
    const auto& args = trace.cpu_ops[*it].args;
    const auto r = args.find("Process Group Ranks");
    if (r == args.end()) continue;
    nlohmann::json list = *r;
    if (list.is_string()) {
      list = nlohmann::json::parse(list.get<std::string>(), nullptr, false);
    }
    if (!list.is_array()) return {};
    for (const auto& x : list) {
      if (!x.is_number_integer() || x.get<std::int64_t>() < 0 || x.get<std::int64_t>() > 1 << 30)
        return {};
      ranks.push_back(x.get<int>());
    }
    return ranks;
  }
  return ranks;
}

// Where the group's ranks sit, or nullopt when the trace does not say.
std::optional<GroupPlacement> placement(const KinetoTrace& trace, const KinetoKernel& kernel,
                                        int group_size, int gpus_per_node) {
  const std::vector<int> ranks = group_ranks(trace, kernel);
  if (!ranks.empty()) {
    std::map<int, int> per_node;
    for (const int r : ranks) ++per_node[r / gpus_per_node];
    GroupPlacement g;
    g.ranks = static_cast<int>(ranks.size());
    g.nodes = static_cast<int>(per_node.size());
    g.min_per_node = g.ranks;
    for (const auto& [node, n] : per_node) g.min_per_node = std::min(g.min_per_node, n);
    return g;
  }
  if (group_size <= gpus_per_node && trace.world_size <= gpus_per_node) {
    return GroupPlacement{group_size, 1, group_size};
  }
  return std::nullopt;
}

std::string sample_name(const KinetoMatch& m, const KinetoKernel& kernel) {
  return fmt::format("{} ({})", m.op, kernel.name.substr(0, 60));
}

void add_comm(const KinetoTrace& trace, const KinetoKernel& kernel, const KinetoMatch& m,
              int gpus_per_node, KinetoSamples& out, std::string& why) {
  const KinetoCollective& c = *m.collective;
  const auto where = placement(trace, kernel, c.p2p ? 2 : c.group_size, gpus_per_node);
  if (!where) {
    why = "group placement unknown (no Process Group Ranks, world larger than a node)";
    return;
  }
  CommSample s;
  s.name = sample_name(m, kernel);
  s.placement = *where;
  s.seconds = kernel.dur_us * 1e-6;
  if (c.p2p) {
    P2PCall p;
    p.sends.push_back(Transfer{1, c.bytes, 0, -1});
    s.body = p;
  } else {
    CollectiveCall call;
    call.kind = c.kind;
    call.bytes = c.bytes;
    call.dtype = c.dtype;
    s.body = call;
  }
  out.samples.comm.push_back(std::move(s));
}

std::optional<double> launch_gap(const KinetoTrace& trace) {
  std::vector<double> gaps;
  for (std::size_t i = 1; i < trace.kernels.size(); ++i) {
    const KinetoKernel& a = trace.kernels[i - 1];
    const KinetoKernel& b = trace.kernels[i];
    if (a.device != b.device || a.stream != b.stream) continue;
    const double gap = b.ts_us - (a.ts_us + a.dur_us);
    if (gap >= 0 && gap < kMaxLaunchGapUs) gaps.push_back(gap * 1e-6);
  }
  if (gaps.empty()) return std::nullopt;
  return median_seconds(std::move(gaps));
}

}  // namespace

KinetoSamples kineto_calibration_samples(const KinetoTrace& trace, int gpus_per_node) {
  KinetoSamples out;
  std::map<std::pair<std::string, std::string>, KinetoUnmatched> unmatched;
  for (const KinetoKernel& kernel : trace.kernels) {
    ++out.kernels;
    out.kernel_seconds += kernel.dur_us * 1e-6;
    const KinetoMatch m = match_kineto_kernel(trace, kernel);
    std::string why = m.unmatched;
    if (why.empty() && kernel.dur_us <= 0) why = "zero duration";
    if (why.empty() && m.call) {
      out.samples.compute.push_back({sample_name(m, kernel), *m.call, kernel.dur_us * 1e-6});
    } else if (why.empty() && m.collective) {
      add_comm(trace, kernel, m, gpus_per_node, out, why);
    }
    if (why.empty()) continue;
    auto& u = unmatched[{std::string(to_string(m.category)), why}];
    if (u.kernels == 0) u = {std::string(to_string(m.category)), why, 0, 0.0, kernel.name};
    ++u.kernels;
    u.seconds += kernel.dur_us * 1e-6;
  }
  for (auto& [key, u] : unmatched) out.unmatched.push_back(std::move(u));
  std::stable_sort(
      out.unmatched.begin(), out.unmatched.end(),
      [](const KinetoUnmatched& a, const KinetoUnmatched& b) { return a.seconds > b.seconds; });
  out.samples.launch_gap_s = launch_gap(trace);
  return out;
}

}  // namespace meshsim
