// Deadlock detection: the Program's readiness rules as a directed graph over two vertices per op,
// D(o) "dispatched" and C(o) "completed", plus one vertex per collective instance. The Program can
// run to completion under blocking semantics iff this graph is acyclic.
//   D(o) -> C(o)                         an op completes after it is dispatched
//   C(prev on stream) -> D(o)            in-order streams
//   C(dep) -> D(o)                       event waits
//   D(prev in launch order) -> D(o)      single hardware queue
//   D(peer) -> C(o)                      p2p rendezvous, both directions per transfer
//   D(member) -> R(inst) -> C(member)    collectives complete when every member has arrived
// and, when any op has a host wait, one issue vertex I(o) per op (the host issue clock):
//   I(prev in launch order) -> I(o) -> D(o), C(host_wait) -> I(o)
// A host wait is part of the Program: it is checked even where no host time is simulated.
// The check runs Kahn's algorithm on this graph without building it: the engine index already
// holds each op's in-degree from its stream, launch queue and deps, and its successors (next on
// the stream and in the launch queue, dependents); the CommPlan holds the matching. The edge
// list is built only to name a cycle once one is found.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <boost/graph/depth_first_search.hpp>

#include "sim/comm_plan.hpp"
#include "sim/engine_index.hpp"
#include "sim/error.hpp"

namespace meshsim {
namespace {

using Graph = boost::compressed_sparse_row_graph<boost::directedS>;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;
using Edge = boost::graph_traits<Graph>::edge_descriptor;

struct CycleFound {
  Vertex from;
  Vertex to;
};

class CycleVisitor : public boost::default_dfs_visitor {
 public:
  explicit CycleVisitor(std::vector<Vertex>& parent) : parent_(&parent) {}
  void tree_edge(Edge e, const Graph& g) { (*parent_)[boost::target(e, g)] = boost::source(e, g); }
  void back_edge(Edge e, const Graph& g) {
    throw CycleFound{boost::source(e, g), boost::target(e, g)};
  }

 private:
  std::vector<Vertex>* parent_;
};

std::size_t dispatch_vertex(std::size_t op) {
  return 2 * op;
}
std::size_t complete_vertex(std::size_t op) {
  return 2 * op + 1;
}

using EdgeList = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

bool has_host_waits(const Program& program) {
  return std::any_of(program.ops.begin(), program.ops.end(),
                     [](const Op& op) { return op.host_wait >= 0; });
}

// The readiness graph's edges (see the top of this file), in a fixed order; with_issue: the host
// issue vertices too (has_host_waits).
EdgeList readiness_edges(const Program& program, const CommPlan& plan, bool with_issue) {
  const std::size_t n_ops = program.ops.size();
  EdgeList edges;
  edges.reserve(4 * n_ops + 2 * plan.transfers.size());
  auto add_edge = [&edges](std::size_t from, std::size_t to) {
    edges.emplace_back(static_cast<std::uint32_t>(from), static_cast<std::uint32_t>(to));
  };
  const std::size_t n_streams = program.streams.size();
  std::vector<std::int64_t> last_on_stream(
      static_cast<std::size_t>(program.world_size()) * n_streams, -1);
  std::vector<std::int64_t> last_launched(static_cast<std::size_t>(program.world_size()), -1);
  for (std::size_t i = 0; i < n_ops; ++i) {
    const Op& op = program.ops[i];
    const auto rank = static_cast<std::size_t>(op.rank);
    add_edge(dispatch_vertex(i), complete_vertex(i));
    auto& prev = last_on_stream[rank * n_streams + static_cast<std::size_t>(op.stream)];
    if (prev >= 0) add_edge(complete_vertex(static_cast<std::size_t>(prev)), dispatch_vertex(i));
    prev = static_cast<std::int64_t>(i);
    for (OpId d : program.deps(static_cast<OpId>(i))) {
      add_edge(complete_vertex(static_cast<std::size_t>(d)), dispatch_vertex(i));
    }
    if (program.single_queue && last_launched[rank] >= 0) {
      add_edge(dispatch_vertex(static_cast<std::size_t>(last_launched[rank])), dispatch_vertex(i));
    }
    last_launched[rank] = static_cast<std::int64_t>(i);
  }
  for (const auto& t : plan.transfers) {
    const auto s = static_cast<std::size_t>(t.send_op), r = static_cast<std::size_t>(t.recv_op);
    add_edge(dispatch_vertex(s), complete_vertex(r));
    add_edge(dispatch_vertex(r), complete_vertex(s));
  }
  for (std::size_t c = 0; c < plan.collectives.size(); ++c) {
    const std::size_t rv = 2 * n_ops + c;
    for (OpId m : plan.collectives[c].members) {
      add_edge(dispatch_vertex(static_cast<std::size_t>(m)), rv);
      add_edge(rv, complete_vertex(static_cast<std::size_t>(m)));
    }
  }
  if (with_issue) {
    const std::size_t issue0 = 2 * n_ops + plan.collectives.size();
    std::fill(last_launched.begin(), last_launched.end(), -1);
    for (std::size_t i = 0; i < n_ops; ++i) {
      const Op& op = program.ops[i];
      auto& prev = last_launched[static_cast<std::size_t>(op.rank)];
      if (prev >= 0) add_edge(issue0 + static_cast<std::size_t>(prev), issue0 + i);
      prev = static_cast<std::int64_t>(i);
      add_edge(issue0 + i, dispatch_vertex(i));
      if (op.host_wait >= 0) {
        add_edge(complete_vertex(static_cast<std::size_t>(op.host_wait)), issue0 + i);
      }
    }
  }
  return edges;
}

// Kahn's algorithm over the readiness graph, read from the engine index and the CommPlan: true
// when every vertex can be ordered, i.e. the graph is acyclic. Vertices by internal index i (the
// index's numbering): D = 2i, C = 2i + 1, then one per collective instance, then (with_issue) one
// issue vertex per op. Linear in vertices + edges; no edge is stored.
class ImplicitKahn {
 public:
  ImplicitKahn(const Program& program, const CommPlan& plan, const EngineIndex& ix, bool with_issue)
      : program_(program),
        plan_(plan),
        ix_(ix),
        n_(ix.ops.size()),
        issue0_(2 * n_ + plan.collectives.size()),
        in_degree_(issue0_ + (with_issue ? n_ : 0), 0) {
    count_in_degrees();
    if (with_issue) index_host_issue();
  }

  bool acyclic() {
    for (std::size_t v = 0; v < in_degree_.size(); ++v) {
      if (in_degree_[v] == 0) ready_.push_back(static_cast<std::uint32_t>(v));
    }
    std::size_t ordered = 0;
    while (!ready_.empty()) {
      const std::uint32_t v = ready_.back();
      ready_.pop_back();
      ++ordered;
      release_successors(v);
    }
    return ordered == in_degree_.size();
  }

 private:
  std::size_t internal(OpId id) const {
    return static_cast<std::size_t>(ix_.internal[static_cast<std::size_t>(id)]);
  }
  void release(std::size_t v) {
    if (--in_degree_[v] == 0) ready_.push_back(static_cast<std::uint32_t>(v));
  }

  void count_in_degrees() {
    for (std::size_t i = 0; i < n_; ++i) {
      in_degree_[2 * i] = static_cast<std::uint32_t>(ix_.ops[i].pending);  // stream, queue, deps
      in_degree_[2 * i + 1] = 1;                                           // its own dispatch
    }
    for (const auto& t : plan_.transfers) {  // D(peer) -> C(o), both directions
      ++in_degree_[2 * internal(t.send_op) + 1];
      ++in_degree_[2 * internal(t.recv_op) + 1];
    }
    for (std::size_t c = 0; c < plan_.collectives.size(); ++c) {
      const auto& members = plan_.collectives[c].members;
      in_degree_[2 * n_ + c] = static_cast<std::uint32_t>(members.size());
      for (OpId m : members) ++in_degree_[2 * internal(m) + 1];
    }
  }

  // The issue chain in launch order per rank, and who waits for each op on the host.
  void index_host_issue() {
    issue_next_.assign(n_, kNoOp);
    std::vector<std::int64_t> last(static_cast<std::size_t>(program_.world_size()), -1);
    std::vector<std::uint32_t> waiter_count(n_ + 1, 0);
    for (std::size_t id = 0; id < program_.ops.size(); ++id) {
      const Op& op = program_.ops[id];
      const std::size_t i = internal(static_cast<OpId>(id));
      auto& prev = last[static_cast<std::size_t>(op.rank)];
      if (prev >= 0) {
        issue_next_[static_cast<std::size_t>(prev)] = static_cast<std::int32_t>(i);
        ++in_degree_[issue0_ + i];
      }
      prev = static_cast<std::int64_t>(i);
      ++in_degree_[2 * i];  // I(o) -> D(o)
      if (op.host_wait >= 0) {
        ++in_degree_[issue0_ + i];
        ++waiter_count[internal(op.host_wait) + 1];
      }
    }
    for (std::size_t i = 0; i < n_; ++i) waiter_count[i + 1] += waiter_count[i];
    waiters_begin_ = waiter_count;
    waiters_.resize(waiter_count[n_]);
    for (std::size_t id = 0; id < program_.ops.size(); ++id) {
      const OpId wait = program_.ops[id].host_wait;
      if (wait >= 0) {
        waiters_[waiter_count[internal(wait)]++] =
            static_cast<std::uint32_t>(internal(static_cast<OpId>(id)));
      }
    }
  }

  void release_successors(std::uint32_t v) {
    if (v >= issue0_) {  // I(o) -> D(o), I(next issued on the rank)
      const std::size_t i = v - issue0_;
      release(2 * i);
      if (issue_next_[i] != kNoOp) release(issue0_ + static_cast<std::size_t>(issue_next_[i]));
    } else if (v >= 2 * n_) {  // R -> C(member)
      for (OpId m : plan_.collectives[v - 2 * n_].members) release(2 * internal(m) + 1);
    } else if (v % 2 == 0) {  // D(o) -> C(o), D(next launched), C(peers), R
      const std::size_t i = v / 2;
      const HotOp& h = ix_.ops[i];
      release(2 * i + 1);
      if (h.launch_next != kNoOp) release(2 * static_cast<std::size_t>(h.launch_next));
      const auto id = static_cast<std::size_t>(ix_.order[i]);
      for (std::int32_t k = plan_.op_transfer_begin[id]; k < plan_.op_transfer_begin[id + 1]; ++k) {
        const auto& t = plan_.transfers[static_cast<std::size_t>(
            plan_.op_transfers[static_cast<std::size_t>(k)])];
        const OpId peer = static_cast<std::size_t>(t.send_op) == id ? t.recv_op : t.send_op;
        release(2 * internal(peer) + 1);
      }
      const std::int32_t c = plan_.op_collective[id];
      if (c >= 0) release(2 * n_ + static_cast<std::size_t>(c));
    } else {  // C(o) -> D(next on stream), D(dependents), I(host waiters)
      const std::size_t i = v / 2;
      const HotOp& h = ix_.ops[i];
      if (h.stream_next != kNoOp) release(2 * static_cast<std::size_t>(h.stream_next));
      for (std::int32_t k = h.dependents_begin; k < h.dependents_end; ++k) {
        release(2 * static_cast<std::size_t>(ix_.dependents[static_cast<std::size_t>(k)]));
      }
      if (!waiters_begin_.empty()) {
        for (std::uint32_t k = waiters_begin_[i]; k < waiters_begin_[i + 1]; ++k) {
          release(issue0_ + waiters_[k]);
        }
      }
    }
  }

  const Program& program_;
  const CommPlan& plan_;
  const EngineIndex& ix_;
  std::size_t n_, issue0_;
  std::vector<std::uint32_t> in_degree_;
  std::vector<std::uint32_t> ready_;
  std::vector<std::int32_t> issue_next_;
  std::vector<std::uint32_t> waiters_begin_, waiters_;
};

// A cycle of the graph, named op by op: a depth-first search (run only when Kahn found one).
[[noreturn]] void report_cycle(const Program& program, const EdgeList& list, std::size_t n_vertices,
                               std::size_t issue0) {
  const std::size_t n_ops = program.ops.size();
  std::vector<std::pair<std::size_t, std::size_t>> edges(list.begin(), list.end());
  const Graph g(boost::edges_are_unsorted_multi_pass, edges.begin(), edges.end(), n_vertices);
  edges = {};
  std::vector<Vertex> parent(n_vertices);
  for (std::size_t v = 0; v < n_vertices; ++v) parent[v] = v;
  try {
    boost::depth_first_search(g, boost::visitor(CycleVisitor(parent)));
  } catch (const CycleFound& cycle) {
    // The cycle is cycle.to -> ... -> cycle.from (tree edges) -> cycle.to (the back edge).
    std::vector<Vertex> path{cycle.from};
    for (Vertex v = cycle.from; v != cycle.to;) {
      v = parent[v];
      path.push_back(v);
    }
    std::reverse(path.begin(), path.end());
    std::vector<std::string> names;
    std::int64_t last_op = -1;
    for (Vertex v : path) {
      if (v >= issue0) {  // the host issuing an op (host clock): named when it waits
        const Op& op = program.ops[v - issue0];
        if (op.host_wait >= 0) {
          names.push_back(fmt::format("the host, before issuing {}, waiting for {}",
                                      describe_op(program, op.id),
                                      describe_op(program, op.host_wait)));
          last_op = -1;
        }
        continue;
      }
      if (v >= 2 * n_ops) continue;  // collective rendezvous vertex
      const auto op = static_cast<std::int64_t>(v / 2);
      if (op == last_op) continue;
      last_op = op;
      names.push_back(describe_op(program, static_cast<OpId>(op)));
    }
    constexpr std::size_t kMaxListed = 16;
    std::string listed;
    for (std::size_t i = 0; i < names.size() && i < kMaxListed; ++i) {
      listed += (i == 0 ? "" : " -> ") + names[i];
    }
    if (names.size() > kMaxListed) listed += fmt::format(" -> ... ({} ops in all)", names.size());
    throw InputError(fmt::format("deadlock: these ops wait on each other in a cycle: {}", listed));
  }
  invariant_failed("a depth-first search finds the cycle Kahn's algorithm found", __FILE__,
                   __LINE__, "no back edge");
}

}  // namespace

void check_deadlock_free(const Program& program, const CommPlan& plan) {
  const std::size_t issue0 = 2 * program.ops.size() + plan.collectives.size();
  const bool with_issue = has_host_waits(program);
  const std::size_t n_vertices = issue0 + (with_issue ? program.ops.size() : 0);
  MESHSIM_CHECK(n_vertices < (std::size_t{1} << 32), "the readiness graph fits 32-bit ids");
  EngineIndex local;
  const EngineIndex& ix = engine_index_of(program, plan, local);
  if (ImplicitKahn(program, plan, ix, with_issue).acyclic()) return;
  report_cycle(program, readiness_edges(program, plan, with_issue), n_vertices, issue0);
}

}  // namespace meshsim
