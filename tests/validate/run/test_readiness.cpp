#include <doctest/doctest.h>

#include <vector>

#include "sim/error.hpp"
#include "sim/program.hpp"
#include "validate/run/readiness.hpp"

using namespace meshsim;

namespace {

KernelCall k() {
  return KernelCall{KernelKind::elementwise, DType::fp32, VectorShape{1}, {}, {}};
}

// One rank, launch order: 0 "a" (compute), 1 "b" (comm, after a), 2 "c" (compute), 3 "d" (comm).
Program four_ops(bool single_queue) {
  ProgramBuilder b(Mesh({{"cp", 1}}, 8), single_queue, "readiness");
  const StreamId compute = b.stream("compute");
  const StreamId comm = b.stream("comm");
  const OpId a = b.add(0, compute, "a", {}, k());
  b.add(0, comm, "b", {}, k(), {a});
  b.add(0, compute, "c", {}, k());
  b.add(0, comm, "d", {}, k());
  return std::move(b).finish();
}

}  // namespace

TEST_CASE("single queue: dispatch follows launch order; stream order and deps hold") {
  const Program p = four_ops(true);
  const RankSchedule s(p, 0);
  ReadinessTracker t(s);
  std::vector<int> woken;
  CHECK(t.ready(0));
  CHECK_FALSE(t.ready(1));  // dep a not complete
  CHECK_FALSE(t.ready(2));  // stream predecessor a not complete
  CHECK_FALSE(t.ready(3));  // launched after b, which is not dispatched
  t.dispatch(0, woken);
  CHECK(woken == std::vector<int>{1});  // the next launch may go once its deps allow
  CHECK_FALSE(t.ready(1));
  woken.clear();
  t.complete(0, woken);
  CHECK(woken == std::vector<int>{2, 1});  // a's stream successor c, its dependent b
  CHECK(t.ready(1));
  CHECK_FALSE(t.ready(2));  // c is launched after b: waits for b's dispatch
  CHECK(t.describe_state(p, 2).find("single queue") != std::string::npos);
  woken.clear();
  t.dispatch(1, woken);
  CHECK(t.ready(2));
  CHECK_FALSE(t.ready(3));  // d: b (its stream predecessor) still runs
  CHECK(t.describe_state(p, 3).find("the op before it on its stream") != std::string::npos);
  t.dispatch(2, woken);
  t.complete(1, woken);
  CHECK(t.ready(3));
  t.dispatch(3, woken);
  t.complete(2, woken);
  t.complete(3, woken);
  CHECK(t.all_completed());
  CHECK(t.describe_state(p, 3).find("completed") != std::string::npos);
}

TEST_CASE("several queues: a later launch may dispatch first") {
  const Program p = four_ops(false);
  const RankSchedule s(p, 0);
  ReadinessTracker t(s);
  std::vector<int> woken;
  CHECK(t.ready(0));
  CHECK_FALSE(t.ready(3));  // d waits for b, its stream predecessor
  t.dispatch(0, woken);
  t.complete(0, woken);
  CHECK(t.ready(1));
  CHECK(t.ready(2));
  t.dispatch(2, woken);  // c before b, which was launched earlier: allowed
  CHECK(t.ready(1));
  CHECK_THROWS_AS(t.dispatch(3, woken), InvariantError);  // b has not completed
  CHECK_THROWS_AS(t.complete(1, woken), InvariantError);  // b was not dispatched
}
