#include <doctest/doctest.h>

#include "schedules/collective.hpp"
#include "sim/comm_plan.hpp"

using namespace meshsim;

TEST_CASE("build_collective: K communicators of N ranks, one op per rank each") {
  CollectiveConfig c;
  c.op = "allgather";
  c.ranks = 4;
  c.concurrent = 2;
  const Program p = build_collective(c, 1 << 20);
  CHECK(p.world_size() == 4);
  CHECK(p.groups.size() == 2);
  CHECK(p.streams.size() == 2);
  CHECK(p.ops.size() == 8);
  const CommPlan plan = validate_program(p);
  CHECK(plan.collectives.size() == 2);
  CHECK(collective_kind_of("allgather") == CollectiveKind::all_gather);
  CHECK_FALSE(collective_kind_of("sendrecv").has_value());
}

TEST_CASE("build_collective: sendrecv is a ring of exchanges, N transfers per communicator") {
  CollectiveConfig c;
  c.op = "sendrecv";
  c.ranks = 3;
  const CommPlan plan = validate_program(build_collective(c, 4096));
  CHECK(plan.transfers.size() == 3);
  for (const auto& t : plan.transfers) CHECK(t.dst == (t.src + 1) % 3);
}
