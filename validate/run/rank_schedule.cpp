#include "validate/run/rank_schedule.hpp"

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {

RankSchedule::RankSchedule(const Program& program, int rank)
    : rank_(rank), single_queue_(program.single_queue) {
  MESHSIM_CHECK(rank >= 0 && rank < program.world_size(),
                fmt::format("rank {} outside a Program of {} ranks", rank, program.world_size()));
  streams_.resize(program.streams.size());
  local_of_op_.assign(program.ops.size(), -1);
  for (const Op& op : program.ops) {
    if (op.rank != rank) continue;
    const int local = static_cast<int>(ops_.size());
    local_of_op_[static_cast<std::size_t>(op.id)] = local;
    ScheduledOp s;
    s.op = op.id;
    s.stream = op.stream;
    auto& on_stream = streams_[static_cast<std::size_t>(op.stream)];
    if (!on_stream.empty()) {
      s.stream_prev = on_stream.back();
      ops_[static_cast<std::size_t>(on_stream.back())].stream_next = local;
    }
    on_stream.push_back(local);
    for (OpId d : program.deps(op.id)) {
      const int dep = local_of_op_[static_cast<std::size_t>(d)];
      MESHSIM_CHECK(dep >= 0, fmt::format("op {} depends on op {}, not an earlier op of rank {}",
                                          op.id, d, rank));
      s.deps.push_back(dep);
    }
    ops_.push_back(std::move(s));
  }
  dependents_.resize(ops_.size());
  for (std::size_t i = 0; i < ops_.size(); ++i) {
    for (int d : ops_[i].deps)
      dependents_[static_cast<std::size_t>(d)].push_back(static_cast<int>(i));
  }
}

int RankSchedule::local_index(OpId op) const {
  if (op < 0 || static_cast<std::size_t>(op) >= local_of_op_.size()) return -1;
  return local_of_op_[static_cast<std::size_t>(op)];
}

}  // namespace meshsim
