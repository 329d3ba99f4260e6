#include "sim/host_clock.hpp"

#include <algorithm>

#include "sim/error.hpp"

namespace meshsim {

HostClock::HostClock(const Program& program, const EngineIndex& index,
                     const std::vector<Nanos>& host)
    : program_(&program), index_(&index), host_(&host) {
  const auto ranks = static_cast<std::size_t>(program.world_size());
  MESHSIM_CHECK(host.size() == program.ops.size(), "durations.host size differs from op count");
  clock_.assign(ranks, 0);
  cursor_.assign(ranks, 0);
  waiting_.assign(ranks, kNoOp);
  resumed_by_.assign(ranks, kNoOp);
  wait_from_.assign(ranks, 0);
  launch_order_.resize(ranks);
  issue_at_.assign(program.ops.size(), 0);
  issued_after_.assign(program.ops.size(), kNoOp);
  for (const Op& op : program.ops) {
    MESHSIM_CHECK(host[static_cast<std::size_t>(op.id)] >= 0, "negative host issue time");
    launch_order_[static_cast<std::size_t>(op.rank)].push_back(op.id);
  }
}

void HostClock::advance(std::size_t r, Nanos t, const std::vector<OpTiming>& done,
                        std::vector<std::int32_t>& out) {
  const auto& order = launch_order_[r];
  std::size_t& cursor = cursor_[r];
  Nanos& clock = clock_[r];
  if (waiting_[r] != kNoOp) {  // resumed: the waited op completed at t
    if (t > wait_from_[r]) {   // the host did wait (its clock had not passed the completion)
      waits_.push_back(HostWait{static_cast<int>(r), order[cursor], waiting_[r], wait_from_[r], t});
      resumed_by_[r] = waiting_[r];
    }
    waiting_[r] = kNoOp;
  }
  clock = std::max(clock, t);
  while (cursor < order.size()) {
    const OpId id = order[cursor];
    const OpId wait = program_->ops[static_cast<std::size_t>(id)].host_wait;
    if (wait >= 0 && done[static_cast<std::size_t>(wait)].end < 0) {
      waiting_[r] = wait;
      wait_from_[r] = clock;
      return;
    }
    ++cursor;
    clock += (*host_)[static_cast<std::size_t>(id)];
    const std::int32_t i = index_->internal[static_cast<std::size_t>(id)];
    issue_at_[static_cast<std::size_t>(i)] = clock;
    issued_after_[static_cast<std::size_t>(i)] = resumed_by_[r];
    out.push_back(i);
  }
}

}  // namespace meshsim
