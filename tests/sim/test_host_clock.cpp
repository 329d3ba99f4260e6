#include <doctest/doctest.h>

#include <vector>

#include "sim/comm_plan.hpp"
#include "sim/cost_model.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/metrics.hpp"
#include "sim/program_json.hpp"
#include "tests/sim/tiny_programs.hpp"

using namespace meshsim;
using namespace meshsim::testing;

namespace {

// Every kernel `compute_ns`, every op `host_ns` of host time to issue.
Ran run_host(Program p, Nanos compute_ns, Nanos host_ns) {
  return run(std::move(p), compute_ns, 0, 0, host_ns);
}

Program three_kernels() {
  ProgramBuilder b(Mesh({{"dp", 1}}, 8), false, "t");
  b.set_host_issue(true);
  const StreamId s = b.stream("compute");
  for (int i = 0; i < 3; ++i) b.add(0, s, "k", {}, vector_kernel());
  return std::move(b).finish();
}

}  // namespace

TEST_CASE("a host slower than its kernels: each kernel starts when it is issued") {
  // Host 30 ns per op, kernels 10 ns: issued at 30, 60, 90, each done 10 ns later.
  const Ran r = run_host(three_kernels(), 10, 30);
  CHECK(r.timeline.ops[0].start == 30);
  CHECK(r.timeline.ops[1].start == 60);
  CHECK(r.timeline.ops[2].start == 90);
  CHECK(r.timeline.makespan == 100);
  CHECK(r.timeline.causes[2].by_host);
  CHECK(r.timeline.causes[2].op == -1);  // the host never waited
}

TEST_CASE(
    "each rank's host issues its own ops in launch order when ranks interleave in the Program") {
  // Program order: rank 1, rank 0, rank 1, rank 0, rank 1. Host 30 ns per op, kernels 10 ns, each
  // rank on its own clock: rank 1's ops are issued at 30, 60, 90 and rank 0's at 30, 60.
  ProgramBuilder b(Mesh({{"dp", 2}}, 8), false, "t");
  b.set_host_issue(true);
  const StreamId s = b.stream("compute");
  std::vector<OpId> ids;
  for (int rank : {1, 0, 1, 0, 1}) ids.push_back(b.add(rank, s, "k", {}, vector_kernel()));
  const Ran r = run_host(std::move(b).finish(), 10, 30);
  const Nanos expected[] = {30, 30, 60, 60, 90};
  for (std::size_t i = 0; i < ids.size(); ++i) {
    CHECK(r.timeline.ops[static_cast<std::size_t>(ids[i])].start == expected[i]);
  }
  CHECK(r.timeline.makespan == 100);
}

TEST_CASE("a host ahead of its kernels adds only the first issue") {
  // Host 10 ns, kernels 100 ns: issued at 10, 20, 30; the stream runs them back to back from 10.
  const Ran r = run_host(three_kernels(), 100, 10);
  CHECK(r.timeline.ops[0].start == 10);
  CHECK(r.timeline.ops[1].start == 110);
  CHECK(r.timeline.ops[2].start == 210);
  CHECK(r.timeline.makespan == 310);
  CHECK_FALSE(r.timeline.causes[1].by_host);  // released by the stream, issued long before
}

TEST_CASE("a host wait: the host issues nothing until the waited op completes") {
  ProgramBuilder b(Mesh({{"dp", 1}}, 8), false, "t");
  const StreamId s = b.stream("compute");
  const StreamId other = b.stream("other");
  const OpId a = b.add(0, s, "a", {}, vector_kernel());
  b.host_wait_next(a);
  const OpId w = b.add(0, s, "b", {}, vector_kernel());
  const OpId c = b.add(0, other, "c", {}, vector_kernel());
  Program p = std::move(b).finish();
  CHECK(p.ops[static_cast<std::size_t>(w)].host_wait == a);
  CHECK(p.ops[static_cast<std::size_t>(c)].host_wait == -1);  // only the next op
  // Host 10, kernels 100: a runs 10-110; b is issued at 110 + 10, c (another stream, free) at
  // 130, not at 30 as without the wait.
  const Ran r = run_host(std::move(p), 100, 10);
  CHECK(r.timeline.ops[0].start == 10);
  CHECK(r.timeline.ops[1].start == 120);
  CHECK(r.timeline.ops[2].start == 130);
  CHECK(r.timeline.makespan == 230);
  CHECK(r.timeline.causes[1].by_host);
  CHECK(r.timeline.causes[1].op == a);
  // The wait itself: from the host's clock after issuing a (10) to a's completion (110).
  REQUIRE(r.timeline.host_waits.size() == 1);
  CHECK(r.timeline.host_waits[0].op == w);
  CHECK(r.timeline.host_waits[0].waited == a);
  CHECK(r.timeline.host_waits[0].from == 10);
  CHECK(r.timeline.host_waits[0].to == 110);

  // The critical path: b (100) after the host's 10 ns issue after a, a (100) after the first
  // issue (10); c ends at 230 after the host's issue of b and c (20 ns) after a.
  const RunMetrics m = compute_metrics(r.program, r.plan, r.timeline);
  Nanos host = 0, total = 0;
  for (const auto& cat : m.critical_path) {
    total += cat.time;
    if (cat.category == "host") host = cat.time;
  }
  CHECK(total == 230);
  CHECK(host == 30);  // 0-10 before a, 110-130 before c
}

TEST_CASE("a host wait on an op that completed before the host got there costs nothing") {
  // Host 1000 ns per op: w (100 ns) is issued at 1000 and done at 1100; the host reaches x, which
  // waits for w, only at 6000 (after five more issues), so it never waits.
  ProgramBuilder b(Mesh({{"dp", 1}}, 8), false, "t");
  b.set_host_issue(true);
  const StreamId s = b.stream("compute");
  const StreamId other = b.stream("other");
  const OpId w = b.add(0, s, "w", {}, vector_kernel());
  for (int i = 0; i < 5; ++i) b.add(0, other, "small", {}, vector_kernel());
  b.host_wait_next(w);
  const OpId x = b.add(0, s, "x", {}, vector_kernel());
  const Ran r = run_host(std::move(b).finish(), 100, 1000);
  CHECK(r.timeline.ops[static_cast<std::size_t>(x)].start == 7000);
  CHECK(r.timeline.causes[static_cast<std::size_t>(x)].by_host);
  CHECK(r.timeline.causes[static_cast<std::size_t>(x)].op == -1);  // no wait on the path
  CHECK(r.timeline.host_waits.empty());
}

TEST_CASE("without host times the host wait changes nothing") {
  ProgramBuilder b(Mesh({{"dp", 1}}, 8), false, "t");
  const StreamId s = b.stream("compute");
  const StreamId other = b.stream("other");
  const OpId a = b.add(0, s, "a", {}, vector_kernel());
  b.host_wait_next(a);
  b.add(0, other, "b", {}, vector_kernel());
  Program p = std::move(b).finish();
  const CommPlan plan = validate_program(p);
  const Timeline t = simulate(p, plan, uniform_durations(p, plan, 100, 0, 0));
  CHECK(t.ops[1].start == 0);  // Durations::host empty: the host clock is off
}

TEST_CASE("two hosts each waiting for a receive before their send deadlock") {
  // Without the host waits the sends (own streams) would run; with them each host waits for a
  // receive whose sender is never issued.
  ProgramBuilder b(Mesh({{"dp", 2}}, 8), false, "t");
  const StreamId rx = b.stream("rx");
  const StreamId tx = b.stream("tx");
  for (int r = 0; r < 2; ++r) {
    const OpId recv = b.add(r, rx, "recv", {}, recv_from(1 - r, 8));
    b.host_wait_next(recv);
    b.add(r, tx, "send", {}, send_to(1 - r, 8));
  }
  const Program p = std::move(b).finish();
  CHECK_THROWS_WITH_AS(validate_program(p), doctest::Contains("deadlock"), InputError);
  CHECK_THROWS_WITH_AS(validate_program(p), doctest::Contains("the host, before issuing"),
                       InputError);
  Program free_running = p;
  for (Op& op : free_running.ops) op.host_wait = -1;
  CHECK_NOTHROW(validate_program(free_running));
}

TEST_CASE("host_wait in Program JSON: round trip and checks") {
  ProgramBuilder b(Mesh({{"dp", 1}}, 8), false, "t");
  const StreamId s = b.stream("compute");
  const OpId a = b.add(0, s, "a", {}, vector_kernel());
  b.host_wait_next(a);
  b.add(0, s, "b", {}, vector_kernel());
  const Program p = std::move(b).finish();
  auto j = program_to_json(p);
  CHECK_FALSE(j.contains("host_issue"));  // written only when set
  CHECK(j["ops"][1]["host_wait"] == 0);
  CHECK_FALSE(j["ops"][0].contains("host_wait"));  // written only when set
  CHECK(program_from_json(nlohmann::json::parse(j.dump()), "t") == p);
  Program issued = p;
  issued.host_issue = true;
  j = program_to_json(issued);
  CHECK(j["host_issue"] == true);
  CHECK(program_from_json(nlohmann::json::parse(j.dump()), "t") == issued);
  Program later = p;
  later.ops[0].host_wait = 1;  // not an earlier op
  CHECK_THROWS_WITH_AS(validate_program(later), doctest::Contains("host_wait 1"), InputError);
}

TEST_CASE("host_op_us in a profile sets every op's host time") {
  HardwareProfile hw = *builtin_hardware("h100-sxm");
  const Program p = three_kernels();
  const CommPlan plan = validate_program(p);
  hw.host_op = 0;
  CHECK(estimate_durations(p, plan, hw).host.empty());  // 0: the host is not modelled
  hw.host_op = 13.5e-6;
  Program benchmark = p;
  benchmark.host_issue = false;  // not issued by a framework host
  CHECK(estimate_durations(benchmark, plan, hw).host.empty());
  const Durations d = estimate_durations(p, plan, hw);
  REQUIRE(d.host.size() == 3);
  CHECK(d.host[0] == 13500);
  auto j = to_json(hw);
  CHECK(j["host_op_us"] == doctest::Approx(13.5));
  CHECK(hardware_from_json(j, "t").host_op == doctest::Approx(13.5e-6));
  j["host_op_us"] = -1;
  CHECK_THROWS_WITH_AS(hardware_from_json(j, "t"), doctest::Contains("host_op_us"), InputError);
}
