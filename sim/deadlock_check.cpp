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
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <boost/graph/depth_first_search.hpp>

#include "sim/comm_plan.hpp"
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

// Kahn's algorithm over the edges in CSR form: true when every vertex can be ordered, i.e. the
// graph is acyclic. Linear in vertices + edges, no recursion.
bool acyclic(const EdgeList& edges, std::size_t n_vertices) {
  std::vector<std::uint32_t> begin(n_vertices + 1, 0), in_degree(n_vertices, 0);
  for (const auto& [from, to] : edges) {
    ++begin[from + 1];
    ++in_degree[to];
  }
  for (std::size_t v = 0; v < n_vertices; ++v) begin[v + 1] += begin[v];
  std::vector<std::uint32_t> targets(edges.size()), fill(begin.begin(), begin.end() - 1);
  for (const auto& [from, to] : edges) targets[fill[from]++] = to;
  std::vector<std::uint32_t> ready;
  ready.reserve(n_vertices);
  for (std::size_t v = 0; v < n_vertices; ++v) {
    if (in_degree[v] == 0) ready.push_back(static_cast<std::uint32_t>(v));
  }
  for (std::size_t head = 0; head < ready.size(); ++head) {
    const std::uint32_t v = ready[head];
    for (std::uint32_t e = begin[v]; e < begin[v + 1]; ++e) {
      if (--in_degree[targets[e]] == 0) ready.push_back(targets[e]);
    }
  }
  return ready.size() == n_vertices;
}

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
  const EdgeList edges = readiness_edges(program, plan, with_issue);
  if (!acyclic(edges, n_vertices)) report_cycle(program, edges, n_vertices, issue0);
}

}  // namespace meshsim
