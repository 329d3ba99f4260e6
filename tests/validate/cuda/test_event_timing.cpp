#include <doctest/doctest.h>

#include "validate/cuda/event_timing.hpp"

using namespace meshsim;

TEST_CASE("event timing: elapsed milliseconds since the origin become nanosecond records") {
  CHECK(event_ms_to_ns(1.5F) == 1'500'000);  // 1.5 ms x 1e6 ns/ms
  CHECK(event_ms_to_ns(0.0005F) == 500);
  CHECK(event_ms_to_ns(-0.001F) == 0);  // an event racing the origin clamps to it

  const std::vector<OpId> ops = {7, 9, 12};
  const std::vector<std::vector<std::int32_t>> recvs = {{}, {3, 4}, {}};
  const std::vector<OpEventTimes> times = {{0.0F, 1.0F}, {0.5F, 2.0F}, {2.0F, 1.999F}};
  const RankRun run = rank_run_from_events(2, ops, recvs, times);
  CHECK(run.rank == 2);
  REQUIRE(run.ops.size() == 3);
  CHECK(run.ops[0].op == 7);
  CHECK(run.ops[0].start == 0);
  CHECK(run.ops[0].end == 1'000'000);
  CHECK(run.ops[1].start == 500'000);
  CHECK(run.ops[1].dispatch_seq == 1);        // launch order
  CHECK(run.ops[2].end == run.ops[2].start);  // an end before its start (rounding) clamps
  REQUIRE(run.recv_ends.size() == 2);         // a p2p op's receives complete with the op
  CHECK(run.recv_ends[0].transfer == 3);
  CHECK(run.recv_ends[1].end == 2'000'000);
  CHECK(run.wall == 2'000'000);  // the last completion
}
