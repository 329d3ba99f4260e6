#include "sim/collective_bandwidth.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <utility>

#include "sim/network_analytical.hpp"

namespace meshsim {
namespace {

struct Sums {
  int instances = 0;
  double bytes = 0, bus_bytes = 0, time_s = 0, alone_s = 0;
  double min_busbw = std::numeric_limits<double>::infinity();
  std::array<double, FlowPlan::kLinkClassNames.size()> bus_bytes_by_limit{};
};

// The gang's rate alone on the network (bytes per second per unit flow) and the link class of the
// port that sets it: the port with the least capacity per unit flow.
std::pair<double, std::uint8_t> alone_rate(const FlowPlan& flows, const GangFlow& gang) {
  double rate = std::numeric_limits<double>::infinity();
  std::uint8_t limit = 0;
  for (const auto& u : gang.usage) {
    const auto p = static_cast<std::size_t>(u.port);
    const double r = flows.port_capacity[p] / u.units;
    if (r < rate) {
      rate = r;
      limit = flows.port_class[p];
    }
  }
  return {rate, limit};
}

}  // namespace

std::vector<CollectiveBandwidth> collective_bandwidth(const Program& program, const CommPlan& plan,
                                                      const FlowPlan& flows,
                                                      const Timeline& timeline) {
  std::map<std::pair<std::string, CollectiveKind>, Sums> by_key;
  for (std::size_t i = 0; i < plan.collectives.size(); ++i) {
    const CollectiveInstance& inst = plan.collectives[i];
    const GangFlow& gang = flows.collectives[i];
    const WindowTiming& w = timeline.collectives[i];
    if (inst.bytes <= 0 || gang.usage.empty() || w.end <= w.start) continue;
    const Group& group = program.groups[static_cast<std::size_t>(inst.group)];
    const int n =
        static_cast<int>(group.timed_as.empty() ? group.ranks.size() : group.timed_as.size());
    const double bus = static_cast<double>(inst.bytes) * busbw_factor(inst.kind, n);
    const double seconds = ns_to_seconds(w.end - w.start);
    const auto [rate, limit] = alone_rate(flows, gang);
    Sums& s = by_key[{group.dim, inst.kind}];
    ++s.instances;
    s.bytes += static_cast<double>(inst.bytes);
    s.bus_bytes += bus;
    s.time_s += seconds;
    s.alone_s += ns_to_seconds(gang.latency) + gang.work / rate;
    s.min_busbw = std::min(s.min_busbw, bus / seconds);
    s.bus_bytes_by_limit[limit] += bus;
  }
  std::vector<CollectiveBandwidth> out;
  for (const auto& [key, s] : by_key) {
    const auto most = std::max_element(s.bus_bytes_by_limit.begin(), s.bus_bytes_by_limit.end());
    CollectiveBandwidth c;
    c.dim = key.first;
    c.kind = key.second;
    c.instances = s.instances;
    c.bytes = s.bytes;
    c.time_s = s.time_s;
    c.busbw = s.bus_bytes / s.time_s;
    c.min_busbw = s.min_busbw;
    c.alone_busbw = s.bus_bytes / s.alone_s;
    c.limited_by = FlowPlan::kLinkClassNames[static_cast<std::size_t>(
        std::distance(s.bus_bytes_by_limit.begin(), most))];
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace meshsim
