#include "validate/run/readiness.hpp"

#include <fmt/format.h>

#include "sim/comm_plan.hpp"
#include "sim/error.hpp"

namespace meshsim {

ReadinessTracker::ReadinessTracker(const RankSchedule& schedule)
    : schedule_(schedule),
      pending_(static_cast<std::size_t>(schedule.size()), 0),
      dispatched_(static_cast<std::size_t>(schedule.size()), 0),
      completed_(static_cast<std::size_t>(schedule.size()), 0) {
  for (int i = 0; i < schedule.size(); ++i) {
    const ScheduledOp& s = schedule.op(i);
    pending_[static_cast<std::size_t>(i)] =
        (s.stream_prev >= 0 ? 1 : 0) + static_cast<int>(s.deps.size());
  }
}

bool ReadinessTracker::ready(int i) const {
  const auto u = static_cast<std::size_t>(i);
  if (dispatched_[u] != 0 || pending_[u] != 0) return false;
  return !schedule_.single_queue() || next_launch_ == i;
}

void ReadinessTracker::dispatch(int i, std::vector<int>& woken) {
  MESHSIM_CHECK(ready(i), fmt::format("rank {}: op {} dispatched before it was ready",
                                      schedule_.rank(), schedule_.op(i).op));
  dispatched_[static_cast<std::size_t>(i)] = 1;
  if (schedule_.single_queue()) {
    ++next_launch_;
    if (next_launch_ < schedule_.size()) woken.push_back(next_launch_);
  }
}

void ReadinessTracker::complete(int i, std::vector<int>& woken) {
  const auto u = static_cast<std::size_t>(i);
  MESHSIM_CHECK(dispatched_[u] != 0 && completed_[u] == 0,
                fmt::format("rank {}: op {} completed without being dispatched, or twice",
                            schedule_.rank(), schedule_.op(i).op));
  completed_[u] = 1;
  ++completed_count_;
  auto release = [&](int j) {
    if (--pending_[static_cast<std::size_t>(j)] == 0) woken.push_back(j);
  };
  const ScheduledOp& s = schedule_.op(i);
  if (s.stream_next >= 0) release(s.stream_next);
  for (int j : schedule_.dependents(i)) release(j);
}

std::string ReadinessTracker::describe_state(const Program& program, int i) const {
  const ScheduledOp& s = schedule_.op(i);
  const std::string me = describe_op(program, s.op);
  if (completed(i)) return me + ": completed";
  if (dispatched(i)) return me + ": running (dispatched, not completed)";
  std::vector<std::string> waits;
  if (s.stream_prev >= 0 && !completed(s.stream_prev)) {
    waits.push_back(fmt::format("the op before it on its stream ({})",
                                describe_op(program, schedule_.op(s.stream_prev).op)));
  }
  for (int d : s.deps) {
    if (!completed(d)) {
      waits.push_back(fmt::format("dep {}", describe_op(program, schedule_.op(d).op)));
    }
  }
  if (schedule_.single_queue() && next_launch_ < i) {
    waits.push_back(fmt::format("single queue: {} (launched earlier) to be dispatched",
                                describe_op(program, schedule_.op(next_launch_).op)));
  }
  if (waits.empty()) return me + ": ready";
  std::string out = me + ": waits for ";
  for (std::size_t k = 0; k < waits.size(); ++k) out += (k == 0 ? "" : ", ") + waits[k];
  return out;
}

}  // namespace meshsim
