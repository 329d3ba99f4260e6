#include <doctest/doctest.h>

#include "sim/error.hpp"
#include "sim/program.hpp"
#include "tests/sim/tiny_programs.hpp"

using namespace meshsim;
using namespace meshsim::testing;

TEST_CASE("builder: streams and groups are interned, ops numbered in launch order") {
  ProgramBuilder b(Mesh({{"cp", 2}}, 8), true, "t");
  const StreamId s0 = b.stream("compute");
  CHECK(b.stream("comm") == 1);
  CHECK(b.stream("compute") == s0);
  CHECK(b.group("cp", {0, 1}) == 0);
  CHECK(b.group("cp", {0, 1}) == 0);
  CHECK(b.group("cp", {1, 0}) == 1);  // a different order is a different group
  const OpId a = b.add(0, s0, "a", {}, vector_kernel());
  const OpId c = b.add(1, s0, "c", {}, vector_kernel());
  const OpId d = b.add(0, s0, "d", {}, vector_kernel(), {a});
  CHECK(a == 0);
  CHECK(c == 1);
  CHECK(d == 2);
  const Program p = std::move(b).finish();
  CHECK(std::vector<OpId>(p.deps(2).begin(), p.deps(2).end()) == std::vector<OpId>{0});
  // Compressed sparse row: one offset per op and one past the end, one target per dep.
  CHECK(p.dep_offsets == std::vector<std::int32_t>{0, 0, 0, 1});
  CHECK(p.dep_targets == std::vector<OpId>{0});
  CHECK(p.ops[1].is_compute());
}

TEST_CASE("builder: deps read from the Program's own array are copied before it grows") {
  ProgramBuilder b(Mesh({{"cp", 1}}, 8), true, "t");
  const StreamId s = b.stream("compute");
  const OpId a = b.add(0, s, "a", {}, vector_kernel());
  const OpId c = b.add(0, s, "c", {}, vector_kernel(), {a});
  for (int i = 0; i < 100; ++i) b.add(0, s, "again", {}, vector_kernel(), b.peek().deps(c));
  const Program p = std::move(b).finish();
  REQUIRE(p.ops.size() == 102);
  // Every op after c waits for a, as c does: 1 + 100 targets, each a.
  CHECK(p.dep_targets == std::vector<OpId>(101, a));
}

TEST_CASE("builder rejects deps across ranks and on later ops") {
  ProgramBuilder b(Mesh({{"cp", 2}}, 8), true, "t");
  const StreamId s = b.stream("compute");
  const OpId a = b.add(0, s, "a", {}, vector_kernel());
  CHECK_THROWS_AS(b.add(1, s, "x", {}, vector_kernel(), {a}), InvariantError);
  CHECK_THROWS_AS(b.add(0, s, "y", {}, vector_kernel(), {5}), InvariantError);
  CHECK_THROWS_AS(b.add(2, s, "z", {}, vector_kernel()), InvariantError);
}

TEST_CASE("phase and collective names round-trip") {
  for (Phase p : {Phase::none, Phase::fwd, Phase::bwd, Phase::wgrad, Phase::optimizer}) {
    CHECK(parse_phase(to_string(p)) == p);
  }
  for (int i = 0; i < kCollectiveKindCount; ++i) {
    const auto k = static_cast<CollectiveKind>(i);
    CHECK(parse_collective_kind(to_string(k)) == k);
  }
}
