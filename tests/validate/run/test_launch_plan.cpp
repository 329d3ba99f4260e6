#include <doctest/doctest.h>

#include "sim/program.hpp"
#include "validate/run/launch_plan.hpp"

using namespace meshsim;

namespace {

KernelCall k() {
  return KernelCall{KernelKind::elementwise, DType::fp32, VectorShape{1}, {}, {}};
}

}  // namespace

TEST_CASE("cross-stream waits only: same-stream deps and covered waits are dropped") {
  ProgramBuilder b(Mesh({{"cp", 1}}, 8), true, "launch plan");
  const StreamId compute = b.stream("compute");
  const StreamId comm = b.stream("comm");
  const OpId a0 = b.add(0, compute, "a0", {}, k());         // 0
  const OpId a1 = b.add(0, compute, "a1", {}, k(), {a0});   // 1: same stream: no wait
  const OpId c0 = b.add(0, comm, "c0", {}, k(), {a0, a1});  // 2: waits a1 (covers a0)
  b.add(0, comm, "c1", {}, k(), {a0});                      // 3: covered by c0's wait
  b.add(0, compute, "a2", {}, k(), {c0});                   // 4: waits c0
  const Program p = std::move(b).finish();
  const auto plan = launch_plan(RankSchedule(p, 0));
  REQUIRE(plan.size() == 5);
  CHECK(plan[1].wait_events.empty());
  CHECK(plan[2].wait_events == std::vector<int>{1});
  CHECK(plan[3].wait_events.empty());
  CHECK(plan[4].wait_events == std::vector<int>{2});
}
