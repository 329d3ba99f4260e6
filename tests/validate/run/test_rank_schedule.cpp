#include <doctest/doctest.h>

#include "sim/error.hpp"
#include "sim/program.hpp"
#include "validate/run/rank_schedule.hpp"

using namespace meshsim;

namespace {

KernelCall k() {
  return KernelCall{KernelKind::elementwise, DType::fp32, VectorShape{1}, {}, {}};
}

}  // namespace

TEST_CASE("launch order, stream order and deps as local indices of one rank") {
  ProgramBuilder b(Mesh({{"cp", 2}}, 8), true, "schedule");
  const StreamId s0 = b.stream("compute");
  const StreamId s1 = b.stream("comm");
  const StreamId s2 = b.stream("unused");
  const OpId a = b.add(1, s0, "a", {}, k());       // rank 1 local 0
  b.add(0, s0, "other rank", {}, k());             // rank 0
  const OpId c = b.add(1, s1, "c", {}, k(), {a});  // rank 1 local 1
  b.add(1, s0, "d", {}, k(), {c, a});              // rank 1 local 2
  const Program p = std::move(b).finish();
  const RankSchedule s(p, 1);
  REQUIRE(s.size() == 3);
  CHECK(s.op(0).op == a);
  CHECK(s.op(1).op == c);
  CHECK(s.local_index(1) == -1);  // rank 0's op
  CHECK(s.stream(s0) == std::vector<int>{0, 2});
  CHECK(s.stream(s1) == std::vector<int>{1});
  CHECK(s.stream(s2).empty());
  CHECK(s.op(0).stream_next == 2);
  CHECK(s.op(2).stream_prev == 0);
  CHECK(s.op(1).stream_prev == -1);
  CHECK(s.op(2).deps == std::vector<int>{1, 0});
  CHECK(s.dependents(0) == std::vector<int>{1, 2});
  CHECK(s.single_queue());
}
