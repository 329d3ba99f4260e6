#include <doctest/doctest.h>

#include "sim/comm_plan.hpp"
#include "sim/engine.hpp"
#include "sim/metrics.hpp"
#include "tests/sim/tiny_programs.hpp"

using namespace meshsim;
using namespace meshsim::testing;

TEST_CASE("compute, comm, exposed comm and idle per rank") {
  // rank 0: compute A 0..100 then a send; rank 1: compute 0..300 then the receive.
  // The send spins from 100, data moves 300..350. Rank 0: compute 100, comm 250 (100..350),
  // exposed 250 (no compute after 100), idle 0. Rank 1: compute 300, comm 50, exposed 50.
  ProgramBuilder b(Mesh({{"cp", 2}}, 8), false, "t");
  const StreamId comp = b.stream("compute");
  const StreamId comm = b.stream("comm");
  const OpId a = b.add(0, comp, "A", {}, vector_kernel());
  b.add(0, comm, "send", {}, send_to(1, 4096), {a});
  const OpId c = b.add(1, comp, "C", {}, vector_kernel());
  b.add(1, comm, "recv", {}, recv_from(0, 4096), {c});
  const Program p = std::move(b).finish();
  const CommPlan plan = validate_program(p);
  Durations d = uniform_durations(p, plan, 100, 50);
  d.ops[2] = 300;
  const Timeline t = simulate(p, plan, d);
  const RunMetrics m = compute_metrics(p, plan, t);
  CHECK(m.makespan == 350);
  CHECK(m.ranks[0].compute == 100);
  CHECK(m.ranks[0].comm == 250);
  CHECK(m.ranks[0].exposed_comm == 250);
  CHECK(m.ranks[0].idle == 0);
  CHECK(m.ranks[0].bytes_sent == 4096);
  CHECK(m.ranks[0].sends == 1);
  CHECK(m.ranks[1].compute == 300);
  CHECK(m.ranks[1].exposed_comm == 50);
  CHECK(m.ranks[1].sends == 0);
  CHECK(m.bytes_nvlink == 4096);  // both ranks on node 0
  CHECK(m.bytes_network == 0);
  // critical path: C (300, elementwise) -> transfer (50, p2p) = 350
  REQUIRE(m.critical_path.size() == 2);
  CHECK(m.critical_path[0].category == "elementwise");
  CHECK(m.critical_path[0].time == 300);
  CHECK(m.critical_path[1].category == "p2p");
  CHECK(m.critical_path[1].time == 50);
  // the walk starts from the lowest-id op among those ending last: the send (op 1) at 350
  CHECK(m.critical_ops == std::vector<OpId>{2, 1});
}

TEST_CASE("cross-node transfers count as network bytes; overlap hides comm") {
  // 2 ranks on different nodes (1 GPU per node): exchange issued with a long compute beside it.
  ProgramBuilder b(Mesh({{"cp", 2}}, 1), true, "t");
  const StreamId comp = b.stream("compute");
  const StreamId comm = b.stream("comm");
  for (int r = 0; r < 2; ++r) {
    b.add(r, comm, "x", {}, exchange(1 - r, 1 - r, 1000));
    b.add(r, comp, "k", {}, vector_kernel());
  }
  const Program p = std::move(b).finish();
  const CommPlan plan = validate_program(p);
  const Timeline t = simulate(p, plan, uniform_durations(p, plan, 500, 200));
  const RunMetrics m = compute_metrics(p, plan, t);
  CHECK(m.bytes_network == 2000);  // 1000 each way
  CHECK(m.ranks[0].comm == 200);
  CHECK(m.ranks[0].exposed_comm == 0);  // 0..200 under the 0..500 compute
  CHECK(m.ranks[0].idle == 0);
  CHECK(m.makespan == 500);
}
