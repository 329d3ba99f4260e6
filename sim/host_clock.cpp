#include "sim/host_clock.hpp"

#include <algorithm>
#include <span>

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
  issue_at_.assign(program.ops.size(), 0);
  issued_after_.assign(program.ops.size(), kNoOp);
  // Each rank's ops in launch order, as one CSR array (a counting pass, then a filling one).
  launch_begin_.assign(ranks + 1, 0);
  for (const Op& op : program.ops) {
    MESHSIM_CHECK(host[static_cast<std::size_t>(op.id)] >= 0, "negative host issue time");
    ++launch_begin_[static_cast<std::size_t>(op.rank) + 1];
  }
  for (std::size_t r = 0; r < ranks; ++r) launch_begin_[r + 1] += launch_begin_[r];
  launch_order_.resize(program.ops.size());
  std::vector<std::size_t> fill(launch_begin_.begin(), launch_begin_.end() - 1);
  for (const Op& op : program.ops) launch_order_[fill[static_cast<std::size_t>(op.rank)]++] = op.id;
}

void HostClock::advance(std::size_t r, Nanos t, const std::vector<OpTiming>& done,
                        std::vector<std::int32_t>& out) {
  const std::span<const OpId> order(launch_order_.data() + launch_begin_[r],
                                    launch_begin_[r + 1] - launch_begin_[r]);
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
