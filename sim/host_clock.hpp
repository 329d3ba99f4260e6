#pragma once
// The host issue clock of the engine (ARCHITECTURE.md §3): each rank's host issues its ops in
// launch order, one after another, spending Durations::host per op; before issuing an op with a
// host_wait it waits for that op to complete. An op cannot be dispatched before it is issued.
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/engine_index.hpp"
#include "sim/program.hpp"
#include "sim/time.hpp"
#include "sim/timeline.hpp"

namespace meshsim {

class HostClock {
 public:
  HostClock() = default;
  // `host`: the issue time of each op, by op id.
  HostClock(const Program& program, const EngineIndex& index, const std::vector<Nanos>& host);

  // Issues rank r's ops from host time max(clock, t) until one whose host wait has not completed
  // (`done`: ops completed so far, by op id) or the last; appends each (internal index) to `out`.
  void advance(std::size_t r, Nanos t, const std::vector<OpTiming>& done,
               std::vector<std::int32_t>& out);
  // An issued op's issue time and its cause: released by the host after the wait it last resumed
  // from (by internal index).
  Nanos issue_at(std::int32_t op) const { return issue_at_[static_cast<std::size_t>(op)]; }
  OpCause cause(std::int32_t op) const {
    return OpCause{issued_after_[static_cast<std::size_t>(op)], false, true};
  }
  // Whether the host of `rank` waits for op `id` (by op id); when it completes, advance again.
  bool waits_for(std::size_t rank, OpId id) const { return waiting_[rank] == id; }
  // The op the rank's host last waited for (op id; -1: none).
  OpId resumed_by(std::size_t rank) const { return resumed_by_[rank]; }
  std::size_t ranks() const { return clock_.size(); }
  // The waits that took time, in the order they ended.
  std::vector<HostWait> take_waits() { return std::move(waits_); }

 private:
  const Program* program_ = nullptr;
  const EngineIndex* index_ = nullptr;
  const std::vector<Nanos>* host_ = nullptr;
  std::vector<Nanos> clock_;
  std::vector<std::size_t> cursor_;
  std::vector<OpId> waiting_;
  std::vector<OpId> resumed_by_;
  std::vector<std::size_t> launch_begin_;  // rank r's ops: launch_order_[begin[r], begin[r + 1])
  std::vector<OpId> launch_order_;         // op ids, rank by rank, each in launch order
  std::vector<Nanos> issue_at_;            // by internal index
  std::vector<OpId> issued_after_;         // by internal index
  std::vector<Nanos> wait_from_;           // per rank: host time the current wait began
  std::vector<HostWait> waits_;
};

}  // namespace meshsim
