#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "sim/comm_plan.hpp"
#include "sim/error.hpp"
#include "tests/sim/tiny_programs.hpp"

using namespace meshsim;
using namespace meshsim::testing;

namespace {

std::string deadlock_of(const Program& p) {
  try {
    validate_program(p);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("two blocking receives posted before the sends deadlock, and the cycle is listed") {
  ProgramBuilder b(Mesh({{"cp", 2}}, 8), false, "t");
  const StreamId s = b.stream("comm");
  b.add(0, s, "recv from 1", {}, recv_from(1, 8));
  b.add(0, s, "send to 1", {}, send_to(1, 8));
  b.add(1, s, "recv from 0", {}, recv_from(0, 8));
  b.add(1, s, "send to 0", {}, send_to(0, 8));
  const std::string e = deadlock_of(std::move(b).finish());
  CHECK(e.find("deadlock") != std::string::npos);
  CHECK(e.find("rank 0 comm 'recv from 1'") != std::string::npos);
  CHECK(e.find("rank 1 comm 'send to 0'") != std::string::npos);
}

TEST_CASE("the same exchange as one batched group is fine") {
  ProgramBuilder b(Mesh({{"cp", 2}}, 8), false, "t");
  const StreamId s = b.stream("comm");
  b.add(0, s, "x", {}, exchange(1, 1, 8));
  b.add(1, s, "x", {}, exchange(0, 0, 8));
  CHECK(deadlock_of(std::move(b).finish()).empty());
}

TEST_CASE("send and receive on separate streams do not deadlock without the single queue") {
  // Each rank posts its receive on stream A and its send on stream B: with several hardware
  // queues both get dispatched; under the single queue the same program is still fine because
  // dispatch (not completion) is what launch order waits for.
  for (bool single : {false, true}) {
    ProgramBuilder b(Mesh({{"cp", 2}}, 8), single, "t");
    const StreamId a = b.stream("recv");
    const StreamId c = b.stream("send");
    b.add(0, a, "r", {}, recv_from(1, 8));
    b.add(0, c, "s", {}, send_to(1, 8));
    b.add(1, a, "r", {}, recv_from(0, 8));
    b.add(1, c, "s", {}, send_to(0, 8));
    CHECK(deadlock_of(std::move(b).finish()).empty());
  }
}

TEST_CASE("a dep on a receive that waits for a send behind it deadlocks") {
  ProgramBuilder b(Mesh({{"cp", 2}}, 8), false, "t");
  const StreamId comm = b.stream("comm");
  const StreamId other = b.stream("comm2");
  const OpId r0 = b.add(0, comm, "recv", {}, recv_from(1, 8));
  b.add(0, other, "send after recv", {}, send_to(1, 8), {r0});
  const OpId r1 = b.add(1, comm, "recv", {}, recv_from(0, 8));
  b.add(1, other, "send after recv", {}, send_to(0, 8), {r1});
  CHECK(deadlock_of(std::move(b).finish()).find("deadlock") != std::string::npos);
}

TEST_CASE("collectives posted in opposite orders on two groups deadlock") {
  ProgramBuilder b(Mesh({{"tp", 2}}, 8), false, "t");
  const StreamId s = b.stream("comm");
  const GroupId g1 = b.group("tp", {0, 1});
  const GroupId g2 = b.group("tp2", {0, 1});
  const CollectiveCall c1{CollectiveKind::all_reduce, g1, 64, DType::fp32};
  const CollectiveCall c2{CollectiveKind::all_reduce, g2, 64, DType::fp32};
  b.add(0, s, "ar g1", {}, c1);
  b.add(0, s, "ar g2", {}, c2);
  b.add(1, s, "ar g2", {}, c2);
  b.add(1, s, "ar g1", {}, c1);
  CHECK(deadlock_of(std::move(b).finish()).find("deadlock") != std::string::npos);
}

namespace {

// The readiness graph rebuilt from its rules (sim/deadlock_check.cpp's header), independently of
// the check: D(o) = 2o, C(o) = 2o + 1, one vertex per collective instance, one issue vertex per
// op. Acyclic when repeatedly removing the vertices nothing points to removes them all.
bool reference_acyclic(const Program& p, const CommPlan& plan) {
  const std::size_t n = p.ops.size(), issue0 = 2 * n + plan.collectives.size();
  std::vector<std::pair<std::size_t, std::size_t>> edges;
  std::vector<std::int64_t> last_stream(static_cast<std::size_t>(p.world_size()) * p.streams.size(),
                                        -1);
  std::vector<std::int64_t> last_launch(static_cast<std::size_t>(p.world_size()), -1);
  for (std::size_t i = 0; i < n; ++i) {
    const Op& op = p.ops[i];
    edges.emplace_back(2 * i, 2 * i + 1);
    auto& s = last_stream[static_cast<std::size_t>(op.rank) * p.streams.size() +
                          static_cast<std::size_t>(op.stream)];
    if (s >= 0) edges.emplace_back(2 * static_cast<std::size_t>(s) + 1, 2 * i);
    s = static_cast<std::int64_t>(i);
    for (OpId d : p.deps(op.id)) edges.emplace_back(2 * static_cast<std::size_t>(d) + 1, 2 * i);
    auto& l = last_launch[static_cast<std::size_t>(op.rank)];
    if (l >= 0) {
      if (p.single_queue) edges.emplace_back(2 * static_cast<std::size_t>(l), 2 * i);
      edges.emplace_back(issue0 + static_cast<std::size_t>(l), issue0 + i);
    }
    l = static_cast<std::int64_t>(i);
    edges.emplace_back(issue0 + i, 2 * i);
    if (op.host_wait >= 0) {
      edges.emplace_back(2 * static_cast<std::size_t>(op.host_wait) + 1, issue0 + i);
    }
  }
  for (const auto& t : plan.transfers) {
    const auto s = static_cast<std::size_t>(t.send_op), r = static_cast<std::size_t>(t.recv_op);
    edges.emplace_back(2 * s, 2 * r + 1);
    edges.emplace_back(2 * r, 2 * s + 1);
  }
  for (std::size_t c = 0; c < plan.collectives.size(); ++c) {
    for (OpId m : plan.collectives[c].members) {
      edges.emplace_back(2 * static_cast<std::size_t>(m), 2 * n + c);
      edges.emplace_back(2 * n + c, 2 * static_cast<std::size_t>(m) + 1);
    }
  }
  std::vector<bool> removed(issue0 + n, false);
  for (bool progress = true; progress;) {
    progress = false;
    std::vector<int> in(issue0 + n, 0);
    for (const auto& [from, to] : edges) {
      if (!removed[from]) ++in[to];
    }
    for (std::size_t v = 0; v < in.size(); ++v) {
      if (!removed[v] && in[v] == 0) removed[v] = progress = true;
    }
  }
  return std::all_of(removed.begin(), removed.end(), [](bool r) { return r; });
}

// A random Program on 3 ranks: compute ops, matched sends and receives, collectives on three
// groups, each rank's part in one global order and then a few neighbours swapped (which may
// deadlock); random streams, deps on earlier ops, host waits and queue mode.
Program random_program(std::mt19937& rng) {
  // mt19937's output is fixed by the standard (a distribution class's is not): the same programs
  // on every standard library.
  auto pick = [&rng] { return static_cast<int>(rng() % 100); };
  const bool single = pick() < 50;
  ProgramBuilder b(Mesh({{"cp", 3}}, 8), single, "random");
  const StreamId streams[] = {b.stream("compute"), b.stream("comm0"), b.stream("comm1")};
  const GroupId groups[] = {b.group("g01", {0, 1}), b.group("g12", {1, 2}),
                            b.group("g012", {0, 1, 2})};
  const std::vector<std::vector<int>> members = {{0, 1}, {1, 2}, {0, 1, 2}};
  struct Part {
    OpBody body;
    int peer_key;  // sends and receives of one (src, dst) keep their order; -1: free to move
  };
  std::vector<std::vector<Part>> parts(3);
  for (int item = 0; item < 14; ++item) {
    const int kind = pick() % 4;
    if (kind == 0) {
      parts[static_cast<std::size_t>(pick() % 3)].push_back({vector_kernel(), -1});
    } else if (kind == 1) {
      const int src = pick() % 3, dst = (src + 1 + pick() % 2) % 3;
      parts[static_cast<std::size_t>(src)].push_back({send_to(dst, 8), 10 + 3 * src + dst});
      parts[static_cast<std::size_t>(dst)].push_back({recv_from(src, 8), 10 + 3 * src + dst});
    } else if (kind == 3) {  // a batched exchange with both neighbours: two transfers per op
      for (int r = 0; r < 3; ++r) {
        parts[static_cast<std::size_t>(r)].push_back({exchange((r + 1) % 3, (r + 2) % 3, 8), 50});
      }
    } else {
      const int g = pick() % 3;
      for (int r : members[static_cast<std::size_t>(g)]) {
        parts[static_cast<std::size_t>(r)].push_back(
            {CollectiveCall{CollectiveKind::all_reduce, groups[g], 64, DType::fp32}, 100 + g});
      }
    }
  }
  for (auto& list : parts) {
    for (int swaps = pick() % 3; swaps > 0 && list.size() > 1; --swaps) {
      const auto at = static_cast<std::size_t>(pick()) % (list.size() - 1);
      if (list[at].peer_key < 0 || list[at].peer_key != list[at + 1].peer_key) {
        std::swap(list[at], list[at + 1]);
      }
    }
  }
  for (int r = 0; r < 3; ++r) {
    std::vector<OpId> mine;
    for (auto& part : parts[static_cast<std::size_t>(r)]) {
      std::vector<OpId> deps;
      for (int d = 0; d < 2 && !mine.empty(); ++d) {  // up to two, possibly the same one twice
        if (pick() < 25) deps.push_back(mine[static_cast<std::size_t>(pick()) % mine.size()]);
      }
      const OpId id = b.add(r, streams[pick() % 3], "op", {}, std::move(part.body), deps);
      if (!mine.empty() && pick() < 15) {
        b.set_host_wait(id, mine[static_cast<std::size_t>(pick()) % mine.size()]);
      }
      mine.push_back(id);
    }
  }
  return std::move(b).finish();
}

}  // namespace

TEST_CASE("the deadlock check agrees with the readiness graph rebuilt from its rules") {
  std::mt19937 rng(2026);
  int deadlocked = 0, fine = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const Program p = random_program(rng);
    const CommPlan plan = match_communication(p);  // the generator keeps every pair's order
    const bool expected = reference_acyclic(p, plan);
    const std::string e = deadlock_of(p);
    if (expected) {
      CHECK_MESSAGE(e.empty(), "trial " << trial << ": " << e);
    } else {
      CHECK_MESSAGE(e.find("deadlock") != std::string::npos, "trial " << trial << ": " << e);
    }
    ++(expected ? fine : deadlocked);
  }
  // Both outcomes occur often enough for the comparison to mean something.
  CHECK(deadlocked > 300);
  CHECK(fine > 300);
}
