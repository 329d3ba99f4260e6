#include <doctest/doctest.h>

#include "sim/comm_plan.hpp"
#include "sim/error.hpp"
#include "sim/program.hpp"
#include "validate/run/measured_timeline.hpp"

using namespace meshsim;

namespace {

KernelCall k() {
  return KernelCall{KernelKind::elementwise, DType::fp32, VectorShape{1}, {}, {}};
}

// Two ranks: per rank "attn" (compute), "exchange" (comm, after attn: send 64 bytes to the
// other rank and receive as much), "all-reduce" (comm); ids rank 0: 0, 1, 2; rank 1: 3, 4, 5.
Program exchange_program() {
  ProgramBuilder b(Mesh({{"cp", 2}}, 8), true, "measured");
  const StreamId compute = b.stream("compute");
  const StreamId comm = b.stream("comm");
  const GroupId g = b.group("cp", {0, 1});
  for (int r = 0; r < 2; ++r) {
    const OpId a = b.add(r, compute, "attn", {}, k());
    b.add(r, comm, "exchange", {},
          P2PCall{{Transfer{1 - r, 64, 0, -1}}, {Transfer{1 - r, 64, 0, -1}}}, {a});
    b.add(r, comm, "all-reduce", {},
          CollectiveCall{CollectiveKind::all_reduce, g, 64, DType::fp32, 0, -1, -1});
  }
  return std::move(b).finish();
}

RankRun rank_run(int rank, std::vector<OpRecord> ops, std::vector<TransferEnd> recvs) {
  RankRun r;
  r.rank = rank;
  r.ops = std::move(ops);
  r.recv_ends = std::move(recvs);
  for (const auto& o : r.ops) r.wall = std::max(r.wall, o.end);
  return r;
}

}  // namespace

TEST_CASE("records survive the int64 encoding") {
  const RankRun r = rank_run(3, {{7, 10, 20, 0}, {9, 15, 40, 1}}, {{2, 33}});
  const RankRun d = decode_rank_run(encode_rank_run(r));
  CHECK(d.rank == 3);
  CHECK(d.wall == 40);
  REQUIRE(d.ops.size() == 2);
  CHECK(d.ops[1].op == 9);
  CHECK(d.ops[1].start == 15);
  CHECK(d.ops[1].dispatch_seq == 1);
  REQUIRE(d.recv_ends.size() == 1);
  CHECK(d.recv_ends[0].end == 33);
  auto bad = encode_rank_run(r);
  bad.pop_back();
  CHECK_THROWS_AS(decode_rank_run(bad), InvariantError);
}

TEST_CASE("windows, comm starts and causes from the ranks' records") {
  const Program p = exchange_program();
  const CommPlan plan = validate_program(p);
  REQUIRE(plan.transfers.size() == 2);
  // Transfer 0 is rank 0 -> rank 1 (matched first), transfer 1 rank 1 -> rank 0.
  REQUIRE(plan.transfers[0].src == 0);
  // rank 0: attn [0, 100], exchange [100, 400], all-reduce [400, 600]
  // rank 1: attn [0, 250] (straggler), exchange [250, 380], all-reduce [380, 650]
  const std::vector<RankRun> runs = {
      rank_run(0, {{0, 0, 100, 0}, {1, 100, 400, 1}, {2, 400, 600, 2}}, {{1, 390}}),
      rank_run(1, {{3, 0, 250, 0}, {4, 250, 380, 1}, {5, 380, 650, 2}}, {{0, 370}})};
  const Timeline tl = measured_timeline(p, plan, runs);
  CHECK(tl.makespan == 650);
  // Transfer 0 (0 -> 1): rendezvous when rank 1 dispatched its exchange (250), received at 370.
  CHECK(tl.transfers[0].start == 250);
  CHECK(tl.transfers[0].started_by == 4);
  CHECK(tl.transfers[0].end == 370);
  CHECK(tl.transfers[1].start == 250);
  CHECK(tl.transfers[1].end == 390);
  // Both exchanges started moving data at 250; each completed by the transfer ending last.
  CHECK(tl.ops[1].comm_start == 250);
  CHECK(tl.completed_by[1] == 1);
  // The all-reduce: window from the last member's dispatch (rank 0 at 400) to the last end.
  CHECK(tl.collectives[0].start == 400);
  CHECK(tl.collectives[0].started_by == 2);
  CHECK(tl.collectives[0].end == 650);
  CHECK(tl.ops[5].comm_start == 400);
  // Causes: rank 1's exchange was released by its dep attn's completion; the all-reduce by the
  // exchange before it on the comm stream (completion at 380 is later than its launch
  // predecessor's dispatch at 250).
  CHECK(tl.causes[4].op == 3);
  CHECK_FALSE(tl.causes[4].by_dispatch);
  CHECK(tl.causes[5].op == 4);
  CHECK(tl.causes[0].op == -1);
}

TEST_CASE("a missing record is an error naming the op") {
  const Program p = exchange_program();
  const CommPlan plan = validate_program(p);
  const std::vector<RankRun> runs = {rank_run(0, {{0, 0, 1, 0}}, {})};
  CHECK_THROWS_WITH_AS(measured_timeline(p, plan, runs),
                       doctest::Contains("rank 0 comm 'exchange' has no complete record"),
                       InvariantError);
}
