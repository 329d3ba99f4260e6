#include "sim/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <utility>

#include "sim/error.hpp"
#include "sim/intervals.hpp"
#include "sim/network_analytical.hpp"

namespace meshsim {
namespace {

std::string category_of(const Op& op) {
  if (const auto* k = std::get_if<KernelCall>(&op.body)) return std::string(to_string(k->kind));
  if (std::holds_alternative<P2PCall>(op.body)) return "p2p";
  return std::string(to_string(std::get<CollectiveCall>(op.body).kind));
}

void add_critical_path(const Program& program, const Timeline& tl, RunMetrics& m) {
  if (program.ops.empty()) return;
  OpId cur = 0;
  for (std::size_t i = 0; i < tl.ops.size(); ++i) {
    if (tl.ops[i].end > tl.ops[static_cast<std::size_t>(cur)].end) cur = static_cast<OpId>(i);
  }
  std::map<std::string, CriticalPathCategory> by_category;
  Nanos covered = 0;
  // Walk back from the last op to finish; each step charges [segment start, segment end] to the
  // op's category and moves to whatever released that segment.
  while (cur >= 0) {
    const auto ci = static_cast<std::size_t>(cur);
    const Op& op = program.ops[ci];
    const OpTiming& t = tl.ops[ci];
    OpId released_from = cur;  // the op whose dispatch started this op's segment
    Nanos seg_start = t.start;
    if (!op.is_compute()) {
      seg_start = t.comm_start;
      const std::int32_t by = tl.completed_by[ci];
      if (by >= 0) {
        const bool collective = std::holds_alternative<CollectiveCall>(op.body);
        const auto& w = collective ? tl.collectives[static_cast<std::size_t>(by)]
                                   : tl.transfers[static_cast<std::size_t>(by)];
        seg_start = w.start;
        released_from = w.started_by;
      }
    }
    auto& cat = by_category[category_of(op)];
    cat.time += t.end - seg_start;
    cat.ops += 1;
    covered += t.end - seg_start;
    m.critical_ops.push_back(cur);
    // Follow causes from the op that started the segment: a dispatch-released op adds no time.
    OpCause cause = tl.causes[static_cast<std::size_t>(released_from)];
    while (cause.op >= 0 && cause.by_dispatch) {
      cause = tl.causes[static_cast<std::size_t>(cause.op)];
    }
    if (cause.by_host) {
      // Issued by the host: its time since the host-sync op it waited for (or since 0).
      const Nanos from = cause.op >= 0 ? tl.ops[static_cast<std::size_t>(cause.op)].end : 0;
      const Nanos issued = tl.ops[static_cast<std::size_t>(released_from)].start;
      auto& host = by_category["host"];
      host.time += issued - from;
      host.ops += 1;
      covered += issued - from;
    }
    cur = cause.op;
  }
  std::reverse(m.critical_ops.begin(), m.critical_ops.end());
  MESHSIM_CHECK(covered == m.makespan, "critical path does not add up to the makespan");
  for (auto& [name, cat] : by_category) {
    cat.category = name;
    m.critical_path.push_back(cat);
  }
  std::stable_sort(m.critical_path.begin(), m.critical_path.end(),
                   [](const auto& a, const auto& b) { return a.time > b.time; });
}

}  // namespace

RunMetrics compute_metrics(const Program& program, const CommPlan& plan, const Timeline& timeline) {
  RunMetrics m;
  m.makespan = timeline.makespan;
  const auto world = static_cast<std::size_t>(program.world_size());
  m.ranks.resize(world);
  std::vector<std::vector<Interval>> compute(world), comm(world);
  std::vector<std::int64_t> fwd_pairs(world, 0), bwd_pairs(world, 0);
  bool any_fwd = false;
  // Whether each group spans nodes, placed once: a group's ranks each run one op of it, so placing
  // it per op would cost O(ranks^2).
  std::vector<std::optional<bool>> group_spans(program.groups.size());
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    const auto r = static_cast<std::size_t>(op.rank);
    const auto& t = timeline.ops[i];
    ++m.ranks[r].ops;
    if (const auto* k = std::get_if<KernelCall>(&op.body)) {
      compute[r].emplace_back(t.start, t.end);
      if (k->kind == KernelKind::attention_fwd) {
        fwd_pairs[r] += attention_pairs(std::get<AttentionShape>(k->shape));
        any_fwd = true;
      } else if (k->kind == KernelKind::attention_bwd) {
        bwd_pairs[r] += attention_pairs(std::get<AttentionShape>(k->shape));
      }
      continue;
    }
    comm[r].emplace_back(t.start, t.end);
    if (const auto* c = std::get_if<CollectiveCall>(&op.body)) {
      const auto& group = program.groups[static_cast<std::size_t>(c->group)];
      const int n = static_cast<int>(group.ranks.size());
      const auto sent =
          static_cast<std::int64_t>(std::llround(bytes_sent_per_rank(c->kind, n, c->bytes)));
      m.ranks[r].bytes_sent += sent;
      if (c->kind == CollectiveKind::permute) {
        m.ranks[r].sends += n > 1 ? 1 : 0;
      } else {
        ++m.ranks[r].collectives;
      }
      auto& spans = group_spans[static_cast<std::size_t>(c->group)];
      if (!spans) spans = placement_of(program.mesh, group.ranks).nodes > 1;  // once per group
      (*spans ? m.bytes_network : m.bytes_nvlink) += sent;
    }
  }
  for (const auto& tr : plan.transfers) {
    auto& rm = m.ranks[static_cast<std::size_t>(tr.src)];
    rm.bytes_sent += tr.bytes;
    ++rm.sends;
    const bool same_node = program.mesh.node_of(tr.src) == program.mesh.node_of(tr.dst);
    (same_node ? m.bytes_nvlink : m.bytes_network) += tr.bytes;
  }
  for (std::size_t r = 0; r < world; ++r) {
    auto& rm = m.ranks[r];
    rm.rank = static_cast<int>(r);
    const auto k = merge_intervals(compute[r]);
    const auto c = merge_intervals(comm[r]);
    std::vector<Interval> all = k;
    all.insert(all.end(), c.begin(), c.end());
    const Nanos busy = total_length(merge_intervals(std::move(all)));
    rm.compute = total_length(k);
    rm.comm = total_length(c);
    rm.exposed_comm = busy - rm.compute;
    rm.idle = m.makespan - busy;
    rm.attn_pairs = any_fwd ? fwd_pairs[r] : bwd_pairs[r];
  }
  add_critical_path(program, timeline, m);
  return m;
}

}  // namespace meshsim
