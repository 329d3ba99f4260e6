#include "sim/engine_index.hpp"

#include <algorithm>
#include <utility>

namespace meshsim {

EngineIndex build_engine_index(const Program& program, const CommPlan& plan) {
  EngineIndex ix;
  const std::size_t n = program.ops.size();
  const auto ranks = static_cast<std::size_t>(program.world_size());
  const std::size_t n_streams = program.streams.size();

  // Internal numbering: counting sort on (position in rank, rank).
  std::vector<std::int32_t> position(n);
  std::vector<std::int32_t> per_rank(ranks, 0);
  std::int32_t longest = 0;
  for (std::size_t id = 0; id < n; ++id) {
    const auto r = static_cast<std::size_t>(program.ops[id].rank);
    position[id] = per_rank[r]++;
    longest = std::max(longest, per_rank[r]);
  }
  std::vector<std::int32_t> slot_begin(static_cast<std::size_t>(longest) + 1, 0);
  for (std::size_t id = 0; id < n; ++id) ++slot_begin[static_cast<std::size_t>(position[id]) + 1];
  for (std::size_t k = 1; k < slot_begin.size(); ++k) slot_begin[k] += slot_begin[k - 1];
  ix.order.resize(n);
  ix.internal.resize(n);
  for (std::size_t id = 0; id < n; ++id) {  // ranks ascend within a position: ids ascend
    const std::int32_t i = slot_begin[static_cast<std::size_t>(position[id])]++;
    ix.order[static_cast<std::size_t>(i)] = static_cast<OpId>(id);
    ix.internal[id] = i;
  }

  ix.ops.assign(n, HotOp{});
  std::vector<std::int32_t> last_on_stream(ranks * n_streams, kNoOp);
  std::vector<std::int32_t> last_launched(ranks, kNoOp);
  std::vector<std::int32_t> dependents_count(n, 0);
  std::vector<std::pair<std::int32_t, std::int32_t>> dep_edges;  // (dep, dependent), internal
  for (std::size_t id = 0; id < n; ++id) {
    const Op& op = program.ops[id];
    const std::int32_t i = ix.internal[id];
    HotOp& h = ix.ops[static_cast<std::size_t>(i)];
    h.rank = op.rank;
    h.kind = op.is_compute()                            ? OpKind::compute
             : std::holds_alternative<P2PCall>(op.body) ? OpKind::p2p
                                                        : OpKind::collective;
    if (h.kind == OpKind::p2p) {
      h.xfers_left = plan.op_transfer_begin[id + 1] - plan.op_transfer_begin[id];
    }
    auto& prev = last_on_stream[static_cast<std::size_t>(op.rank) * n_streams +
                                static_cast<std::size_t>(op.stream)];
    if (prev != kNoOp) {
      ix.ops[static_cast<std::size_t>(prev)].stream_next = i;
      ++h.pending;
    }
    prev = i;
    auto& launched = last_launched[static_cast<std::size_t>(op.rank)];
    if (program.single_queue && launched != kNoOp) {
      ix.ops[static_cast<std::size_t>(launched)].launch_next = i;
      ++h.pending;
    }
    launched = i;
    const auto deps = program.deps(static_cast<OpId>(id));
    h.pending += static_cast<std::int32_t>(deps.size());
    for (OpId d : deps) {
      const std::int32_t di = ix.internal[static_cast<std::size_t>(d)];
      ++dependents_count[static_cast<std::size_t>(di)];
      dep_edges.emplace_back(di, i);
    }
  }
  // Dependents in CSR form, by internal index, each list in Program order.
  std::int32_t at = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ix.ops[i].dependents_begin = at;
    ix.ops[i].dependents_end = at;
    at += dependents_count[i];
  }
  ix.dependents.resize(static_cast<std::size_t>(at));
  for (const auto& [dep, dependent] : dep_edges) {
    HotOp& h = ix.ops[static_cast<std::size_t>(dep)];
    ix.dependents[static_cast<std::size_t>(h.dependents_end++)] = dependent;
  }
  return ix;
}

const EngineIndex& engine_index_of(const Program& program, const CommPlan& plan,
                                   EngineIndex& local) {
  if (plan.index && plan.index->ops.size() == program.ops.size()) return *plan.index;
  local = build_engine_index(program, plan);
  return local;
}

void initial_counts(const EngineIndex& ix, std::vector<std::int32_t>& pending,
                    std::vector<std::int32_t>& xfers_left) {
  pending.resize(ix.ops.size());
  xfers_left.resize(ix.ops.size());
  for (std::size_t i = 0; i < ix.ops.size(); ++i) {
    pending[i] = ix.ops[i].pending;
    xfers_left[i] = ix.ops[i].xfers_left;
  }
}

}  // namespace meshsim
