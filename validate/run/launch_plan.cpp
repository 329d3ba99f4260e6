#include "validate/run/launch_plan.hpp"

#include <algorithm>

namespace meshsim {

std::vector<LaunchStep> launch_plan(const RankSchedule& schedule) {
  const auto streams = static_cast<std::size_t>(schedule.stream_count());
  // waited[s][t]: the latest op of stream t that stream s has waited for (or runs after), -1.
  std::vector<std::vector<int>> waited(streams, std::vector<int>(streams, -1));
  std::vector<LaunchStep> plan;
  plan.reserve(static_cast<std::size_t>(schedule.size()));
  for (int i = 0; i < schedule.size(); ++i) {
    const ScheduledOp& op = schedule.op(i);
    const auto s = static_cast<std::size_t>(op.stream);
    std::vector<int> deps = op.deps;
    // Latest first: waiting for a later op of a stream covers its earlier ones.
    std::sort(deps.rbegin(), deps.rend());
    LaunchStep step{i, {}};
    for (int d : deps) {
      const auto t = static_cast<std::size_t>(schedule.op(d).stream);
      if (t == s || waited[s][t] >= d) continue;
      waited[s][t] = d;
      step.wait_events.push_back(d);
    }
    plan.push_back(std::move(step));
  }
  return plan;
}

}  // namespace meshsim
