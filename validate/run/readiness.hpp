#pragma once
// The readiness rules of ARCHITECTURE.md §2 as bookkeeping, without threads or clocks: an op may be
// dispatched when (1) the op before it on its stream has completed, (2) its deps have completed
// and (3) under the single hardware queue, every op launched earlier on the rank has been
// dispatched (so dispatch follows launch order). Executors call dispatch() and complete() and
// wake whatever the returned ops are waiting on. Not thread-safe: the caller holds its lock.
#include <string>
#include <vector>

#include "sim/program.hpp"
#include "validate/run/rank_schedule.hpp"

namespace meshsim {

class ReadinessTracker {
 public:
  explicit ReadinessTracker(const RankSchedule& schedule);

  bool ready(int i) const;
  bool dispatched(int i) const { return dispatched_[static_cast<std::size_t>(i)] != 0; }
  bool completed(int i) const { return completed_[static_cast<std::size_t>(i)] != 0; }
  int completed_count() const { return completed_count_; }
  bool all_completed() const { return completed_count_ == schedule_.size(); }

  // Marks i dispatched (it must be ready); appends the ops that may have become ready.
  void dispatch(int i, std::vector<int>& woken);
  // Marks i completed (it must be dispatched); appends the ops that may have become ready.
  void complete(int i, std::vector<int>& woken);

  // What keeps op i from being dispatched (or that it runs / completed), naming ops as the
  // Program's errors do; for stall reports.
  std::string describe_state(const Program& program, int i) const;

 private:
  const RankSchedule& schedule_;
  std::vector<int> pending_;  // stream predecessor + deps not yet completed
  std::vector<char> dispatched_;
  std::vector<char> completed_;
  int next_launch_ = 0;  // single queue: ops [0, next_launch_) are dispatched
  int completed_count_ = 0;
};

}  // namespace meshsim
