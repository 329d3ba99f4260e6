#include <doctest/doctest.h>

#include <algorithm>

#include "sim/comm_plan.hpp"
#include "sim/engine.hpp"
#include "tests/sim/tiny_programs.hpp"

using namespace meshsim;
using namespace meshsim::testing;

namespace {

const OpTiming& at(const Timeline& t, OpId id) {
  return t.ops[static_cast<std::size_t>(id)];
}

}  // namespace

TEST_CASE("in-order streams; different streams overlap") {
  ProgramBuilder b(Mesh({{"dp", 1}}, 8), false, "t");
  const StreamId s1 = b.stream("a");
  const StreamId s2 = b.stream("b");
  b.add(0, s1, "a0", {}, vector_kernel());
  b.add(0, s1, "a1", {}, vector_kernel());
  b.add(0, s2, "b0", {}, vector_kernel());
  const Ran r = run(std::move(b).finish(), 100, 0);
  CHECK(r.timeline.ops[0].start == 0);
  CHECK(r.timeline.ops[1].start == 100);  // after a0 on the same stream
  CHECK(r.timeline.ops[2].start == 0);    // another stream starts at once
  CHECK(r.timeline.makespan == 200);
  CHECK(r.timeline.events == 3);  // one completion per op
}

TEST_CASE("deps wait for completion on another stream") {
  ProgramBuilder b(Mesh({{"dp", 1}}, 8), false, "t");
  const StreamId s1 = b.stream("a");
  const StreamId s2 = b.stream("b");
  const OpId a = b.add(0, s1, "a", {}, vector_kernel());
  b.add(0, s2, "b", {}, vector_kernel(), {a});
  const Ran r = run(std::move(b).finish(), 100, 0);
  CHECK(r.timeline.ops[1].start == 100);
  CHECK(r.timeline.makespan == 200);
  CHECK(r.timeline.causes[1].op == a);
}

TEST_CASE("p2p rendezvous: data moves when both sides are dispatched") {
  ProgramBuilder b(Mesh({{"cp", 2}}, 8), false, "t");
  const StreamId comp = b.stream("compute");
  const StreamId comm = b.stream("comm");
  b.add(0, comm, "send", {}, send_to(1, 64));
  const OpId k = b.add(1, comp, "busy", {}, vector_kernel());
  b.add(1, comm, "recv", {}, recv_from(0, 64), {k});
  const Ran r = run(std::move(b).finish(), 100, 50);
  // send dispatched at 0 and spins; recv dispatched at 100 after `busy`; transfer 100 -> 150
  CHECK(r.timeline.ops[0].start == 0);
  CHECK(r.timeline.ops[0].comm_start == 100);
  CHECK(r.timeline.ops[0].end == 150);
  CHECK(r.timeline.ops[2].start == 100);
  CHECK(r.timeline.ops[2].end == 150);
  CHECK(r.timeline.transfers[0].started_by == 2);
}

TEST_CASE("a p2p group completes when all of its transfers have") {
  ProgramBuilder b(Mesh({{"cp", 3}}, 8), false, "t");
  const StreamId comp = b.stream("compute");
  const StreamId comm = b.stream("comm");
  // rank 0 sends to 1 and 2 in one group; rank 2 is busy for 300 first
  b.add(0, comm, "fan-out", {}, P2PCall{{Transfer{1, 8, 0, -1}, Transfer{2, 8, 0, -1}}, {}});
  b.add(1, comm, "recv", {}, recv_from(0, 8));
  const OpId k = b.add(2, comp, "busy", {}, vector_kernel());
  b.add(2, comm, "recv", {}, recv_from(0, 8), {k});
  const Ran r = run(std::move(b).finish(), 300, 10);
  CHECK(r.timeline.ops[1].end == 10);   // 0 -> 1 at once
  CHECK(r.timeline.ops[3].end == 310);  // 0 -> 2 after busy: 300 + 10
  CHECK(r.timeline.ops[0].end == 310);  // the group waits for both
}

TEST_CASE("collectives complete together when the last member arrives") {
  ProgramBuilder b(Mesh({{"tp", 2}}, 8), false, "t");
  const StreamId comp = b.stream("compute");
  const StreamId comm = b.stream("comm");
  const GroupId g = b.group("tp", {0, 1});
  const CollectiveCall ar{CollectiveKind::all_reduce, g, 1024, DType::bf16};
  b.add(0, comm, "ar", {}, ar);
  const OpId k = b.add(1, comp, "busy", {}, vector_kernel());
  b.add(1, comm, "ar", {}, ar, {k});
  const Ran r = run(std::move(b).finish(), 200, 0, 70);
  CHECK(r.timeline.ops[0].start == 0);
  CHECK(r.timeline.ops[0].end == 270);  // last arrival 200 + 70
  CHECK(r.timeline.ops[2].end == 270);
  CHECK(r.timeline.collectives[0].start == 200);
}

TEST_CASE("single hardware queue: an op waits for everything launched before it to dispatch") {
  // Launch order on rank 0: A (compute, 100), W (comm, waits for A), X (third stream, 10).
  for (bool single : {true, false}) {
    ProgramBuilder b(Mesh({{"cp", 2}}, 8), single, "t");
    const StreamId comp = b.stream("compute");
    const StreamId comm = b.stream("comm");
    const StreamId other = b.stream("other");
    const OpId a = b.add(0, comp, "A", {}, vector_kernel());
    b.add(0, comm, "W", {}, send_to(1, 8), {a});
    b.add(0, other, "X", {}, vector_kernel());
    b.add(1, comm, "r", {}, recv_from(0, 8));
    const Ran r = run(std::move(b).finish(), 100, 5);
    // single queue: X is stuck behind W, which is dispatched when A completes at 100.
    // several queues: X starts at once.
    CHECK(r.timeline.ops[2].start == (single ? 100 : 0));
  }
}

TEST_CASE("several hardware queues: a comm kernel ready with a compute kernel waits for it") {
  // Each rank launches an exchange (500) and then an independent compute kernel (1000).
  auto build = [](bool single) {
    ProgramBuilder b(Mesh({{"cp", 2}}, 8), single, "t");
    const StreamId comp = b.stream("compute");
    const StreamId comm = b.stream("comm");
    for (int r = 0; r < 2; ++r) {
      b.add(r, comm, "exchange", {}, exchange(1 - r, 1 - r, 8));
      b.add(r, comp, "gemm", {}, vector_kernel());
    }
    return std::move(b).finish();
  };
  // single queue: exchange dispatched first and overlaps the GEMM: makespan max(500, 1000)
  CHECK(run(build(true), 1000, 500).timeline.makespan == 1000);
  // several queues: the GEMM fills the device; the exchange runs after it: 1000 + 500
  const Ran multi = run(build(false), 1000, 500);
  CHECK(multi.timeline.makespan == 1500);
  CHECK(multi.timeline.ops[0].start == 1000);
}

TEST_CASE("zero-duration ops and empty p2p groups complete") {
  ProgramBuilder b(Mesh({{"dp", 1}}, 8), true, "t");
  const StreamId s = b.stream("a");
  b.add(0, s, "empty", {}, P2PCall{});
  b.add(0, s, "k", {}, vector_kernel());
  const Ran r = run(std::move(b).finish(), 0, 0);
  CHECK(r.timeline.makespan == 0);
  CHECK(r.timeline.ops[1].end == 0);
}

TEST_CASE("signals fire once per op, in completion order") {
  ProgramBuilder b(Mesh({{"cp", 2}}, 8), true, "t");
  const StreamId s = b.stream("a");
  b.add(0, s, "k0", {}, vector_kernel());
  b.add(0, s, "x", {}, exchange(1, 1, 8));
  b.add(1, s, "x", {}, exchange(0, 0, 8));
  const Program p = std::move(b).finish();
  const CommPlan plan = validate_program(p);
  std::vector<OpId> seen;
  int transfers = 0;
  EngineSignals sig;
  sig.on_op_complete = [&](OpId op, const OpTiming& t) {
    seen.push_back(op);
    CHECK(t.end >= t.start);
  };
  sig.on_transfer_complete = [&](std::int32_t, const WindowTiming& w) {
    ++transfers;
    CHECK(w.end - w.start == 30);
  };
  simulate(p, plan, uniform_durations(p, plan, 100, 30), sig);
  // k0 completes at 100, both exchanges at 130 (100 + 30), each exactly once
  REQUIRE(seen.size() == 3);
  CHECK(seen[0] == 0);
  std::sort(seen.begin(), seen.end());
  CHECK(seen == std::vector<OpId>{0, 1, 2});
  CHECK(transfers == 2);
}

TEST_CASE("interference: compute slows while a comm kernel runs on its rank") {
  // Each rank: an exchange (500 ns of transfer) launched first, then a 1000 ns GEMM beside it;
  // both sides are posted at 0, so the data moves 0 -> 500 on both ranks. With factor 2 the GEMM
  // does 250 ns of work during the exchange (0..500) and the remaining 750 after it: it ends at 500
  // + 750 = 1250. With factor 1 it ends at 1000.
  ProgramBuilder b(Mesh({{"cp", 2}}, 8), true, "t");
  const StreamId comp = b.stream("compute");
  const StreamId comm = b.stream("comm");
  for (int r = 0; r < 2; ++r) {
    b.add(r, comm, "exchange", {}, exchange(1 - r, 1 - r, 8));
    b.add(r, comp, "gemm", {}, vector_kernel());
  }
  const Program p = std::move(b).finish();
  const CommPlan plan = validate_program(p);
  Durations d = uniform_durations(p, plan, 1000, 500);
  CHECK(simulate(p, plan, d).ops[1].end == 1000);
  d.comm_interference = 2.0;
  const Timeline t = simulate(p, plan, d);
  CHECK(t.ops[1].end == 1250);
  CHECK(t.ops[0].end == 500);  // the exchange itself is not slowed
  CHECK(t.makespan == 1250);
}

TEST_CASE("interference: userbuffers transfers do not slow the compute beside them") {
  // The test above with a 2-rank permute (500 ns) instead of the exchange: as an NCCL kernel it
  // slows the 1000 ns GEMM beside it by factor 2 (ends at 1250); as a userbuffers transfer (a
  // copy-engine copy, or an SM-based kernel whose SMs the GEMM's sm_share already leaves out) it
  // does not (ends at 1000).
  for (const CollectiveAlgo algo : {CollectiveAlgo::automatic, CollectiveAlgo::userbuffers}) {
    ProgramBuilder b(Mesh({{"tp", 2}}, 8), true, "t");
    const StreamId comp = b.stream("compute");
    const StreamId comm = b.stream("tp_comm");
    const GroupId g = b.group("tp", {0, 1});
    CollectiveCall c{CollectiveKind::permute, g, 1024, DType::bf16};
    c.shift = 1;
    c.algo = algo;
    for (int r = 0; r < 2; ++r) {
      b.add(r, comm, "ring exchange", {}, c);
      b.add(r, comp, "gemm", {}, vector_kernel());
    }
    const Program p = std::move(b).finish();
    const CommPlan plan = validate_program(p);
    Durations d = uniform_durations(p, plan, 1000, 0, 500);
    d.comm_interference = 2.0;
    const Timeline t = simulate(p, plan, d);
    CAPTURE(to_string(algo));
    CHECK(t.ops[0].end == 500);
    CHECK(t.ops[1].end == (algo == CollectiveAlgo::userbuffers ? 1000 : 1250));
  }
}

TEST_CASE("interference: a comm kernel waiting for its peer does not slow the compute beside it") {
  // Rank 0 posts its comm op (a send, or its share of a 2-rank all-reduce) at 0 and runs GEMMs g1,
  // g2 (1 ms each) beside it; rank 1 is busy for 1 ms, then posts its side and runs `after` (1 ms)
  // beside it. The data moves from 1 ms (both sides posted / the last member arrived) to 1 ms +
  // 500 ns. Factor 2: g1 (0 -> 1 ms) runs while rank 0 only waits, at full speed; g2 and `after`
  // do 250 ns of work during the transfer and 999,750 after it: they end at
  // 1,000,500 + 999,750 = 2,000,250 on both the sending and the receiving rank.
  for (const bool collective : {false, true}) {
    CAPTURE(collective);
    ProgramBuilder b(Mesh({{collective ? "tp" : "cp", 2}}, 8), true, "t");
    const StreamId comp = b.stream("compute");
    const StreamId comm = b.stream("comm");
    const GroupId g = b.group("tp", {0, 1});
    const CollectiveCall ar{CollectiveKind::all_reduce, g, 1024, DType::bf16};
    const OpId first =
        collective ? b.add(0, comm, "ar", {}, ar) : b.add(0, comm, "send", {}, send_to(1, 64));
    const OpId g1 = b.add(0, comp, "g1", {}, vector_kernel());
    const OpId g2 = b.add(0, comp, "g2", {}, vector_kernel());
    const OpId busy = b.add(1, comp, "busy", {}, vector_kernel());
    const OpId second = collective ? b.add(1, comm, "ar", {}, ar, {busy})
                                   : b.add(1, comm, "recv", {}, recv_from(0, 64), {busy});
    const OpId after = b.add(1, comp, "after", {}, vector_kernel());
    const Program p = std::move(b).finish();
    const CommPlan plan = validate_program(p);
    Durations d = collective ? uniform_durations(p, plan, 1'000'000, 0, 500)
                             : uniform_durations(p, plan, 1'000'000, 500);
    d.comm_interference = 2.0;
    const Timeline t = simulate(p, plan, d);
    CHECK((collective ? t.collectives[0].start : t.transfers[0].start) == 1'000'000);
    CHECK(at(t, first).end == 1'000'500);
    CHECK(at(t, second).end == 1'000'500);
    CHECK(at(t, g1).end == 1'000'000);
    CHECK(at(t, busy).end == 1'000'000);
    CHECK(at(t, g2).end == 2'000'250);
    CHECK(at(t, after).end == 2'000'250);
  }
}

TEST_CASE("several hardware queues: a parked comm kernel starts at the next compute boundary") {
  // Rank 0: GEMM g1 (1000), then an exchange that waits for g1, then g2 and g3 back to back on
  // the compute stream (1000 each, independent of the exchange). Rank 1 posts its exchange at 0.
  ProgramBuilder b(Mesh({{"cp", 2}}, 8), false, "t");
  const StreamId comp = b.stream("compute");
  const StreamId comm = b.stream("comm");
  b.add(0, comp, "g0", {}, vector_kernel());
  const OpId g1 = b.add(0, comp, "g1", {}, vector_kernel());
  b.add(0, comm, "exchange", {}, exchange(1, 1, 8), {g1});
  b.add(0, comp, "g2", {}, vector_kernel());
  b.add(0, comp, "g3", {}, vector_kernel());
  b.add(1, comm, "exchange", {}, exchange(0, 0, 8));
  const Ran r = run(std::move(b).finish(), 1000, 500);
  // The exchange becomes ready at 2000 (g1's end) together with g2, which takes the device; it
  // starts at g2's end, 3000, while g3 runs: not after the whole backlog (4000).
  CHECK(r.timeline.ops[2].start == 3000);
  CHECK(r.timeline.ops[2].end == 3500);
  CHECK(r.timeline.makespan == 4000);
}
