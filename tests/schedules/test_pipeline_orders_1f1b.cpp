// Megatron-Core's combined 1F1B orders (PipelineShape::combined_1f1b, pipeline_orders_1f1b.cpp):
// the warm-up of get_pp_rank_microbatches plus one, and the steady state's (F, B) as
// forward_backward pairs.
#include <doctest/doctest.h>

#include <map>
#include <utility>
#include <vector>

#include "schedules/pipeline.hpp"
#include "schedules/pipeline_orders.hpp"
#include "sim/comm_plan.hpp"
#include "sim/cost_model.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/metrics.hpp"

using namespace meshsim;

namespace {

PipelineShape combined(PipelineSchedule s, int p, int m, int v = 1, int g = 0) {
  PipelineShape sh{s, p, m, v, g};
  sh.combined_1f1b = true;
  return sh;
}

PipeAction act(PipeWork w, int mb, int chunk = 0) {
  PipeAction a;
  a.work = w;
  a.microbatch = mb;
  a.chunk = chunk;
  return a;
}

PipeAction pair(int f_mb, int f_chunk, int b_mb, int b_chunk) {
  PipeAction a = act(PipeWork::forward_backward, f_mb, f_chunk);
  a.pair_microbatch = b_mb;
  a.pair_chunk = b_chunk;
  return a;
}

// The steady-state pairs of a rank, and its warm-up forwards (those before the first pair or
// backward).
int leading_forwards(const std::vector<PipeAction>& order) {
  int n = 0;
  for (const PipeAction& a : order) {
    if (a.work != PipeWork::forward) break;
    ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("combined 1F1B without a pipeline: F0, then (F k+1, B k) pairs, then the last B") {
  // Megatron's combined_1f1b_schedule_for_no_pipelining, 4 microbatches: "Phase 0: 1st
  // microbatch forward; Phase 1: 1st microbatch backward + 2nd microbatch forward; ...; Phase 4:
  // 4th microbatch backward".
  const auto orders = pipeline_orders(combined(PipelineSchedule::one_f_one_b, 1, 4));
  REQUIRE(orders.size() == 1);
  const std::vector<PipeAction> want = {act(PipeWork::forward, 0), pair(1, 0, 0, 0),
                                        pair(2, 0, 1, 0), pair(3, 0, 2, 0),
                                        act(PipeWork::backward, 3)};
  CHECK(orders[0] == want);
  // One microbatch: nothing to pair.
  CHECK(pipeline_orders(combined(PipelineSchedule::one_f_one_b, 1, 1))[0] ==
        std::vector<PipeAction>{act(PipeWork::forward, 0), act(PipeWork::backward, 0)});
}

TEST_CASE("combined interleaved: Megatron's warm-up plus one, each steady step one pair") {
  // p = 2, v = 2, m = 4, g = p = 2: warm-up min(2(p-r-1) + (v-1)g + 1, m·v) = 5 on rank 0, 3 on
  // rank 1 (get_pp_rank_microbatches with overlap_moe_expert_parallel_comm); the schedule table
  // of groups of 2: (0,c0) (1,c0) (0,c1) (1,c1) (2,c0) (3,c0) (2,c1) (3,c1).
  const auto orders = pipeline_orders(combined(PipelineSchedule::interleaved, 2, 4, 2));
  CHECK(leading_forwards(orders[0]) == 5);
  CHECK(leading_forwards(orders[1]) == 3);
  // Rank 1: forwards of steps 0-2, then step k pairs forward k+3 with backward k (backward of
  // table[k] on chunk v-1-c), then the cool-down backwards of steps 5-7.
  const std::vector<PipeAction> want1 = {act(PipeWork::forward, 0, 0),
                                         act(PipeWork::forward, 1, 0),
                                         act(PipeWork::forward, 0, 1),
                                         pair(1, 1, 0, 1),
                                         pair(2, 0, 1, 1),
                                         pair(3, 0, 0, 0),
                                         pair(2, 1, 1, 0),
                                         pair(3, 1, 2, 1),
                                         act(PipeWork::backward, 3, 1),
                                         act(PipeWork::backward, 2, 0),
                                         act(PipeWork::backward, 3, 0)};
  CHECK(orders[1] == want1);
  // Every (microbatch, chunk) forward and backward once, on every rank.
  for (const auto& order : orders) {
    std::map<std::pair<int, int>, int> fwd, bwd;
    for (const PipeAction& a : order) {
      if (a.work == PipeWork::forward || a.work == PipeWork::forward_backward) {
        ++fwd[{a.microbatch, a.chunk}];
      }
      if (a.work == PipeWork::backward) ++bwd[{a.microbatch, a.chunk}];
      if (a.work == PipeWork::forward_backward) ++bwd[{a.pair_microbatch, a.pair_chunk}];
    }
    CHECK(fwd.size() == 8);
    CHECK(bwd.size() == 8);
    for (const auto& [k, n] : fwd) CHECK(n == 1);
    for (const auto& [k, n] : bwd) CHECK(n == 1);
  }
  // One more chunk-activation in flight than the plain interleaved order: the price Megatron
  // names for making each pair's forward and backward independent.
  const std::vector<int> plain =
      peak_inflight(PipelineShape{PipelineSchedule::interleaved, 2, 4, 2, 0});
  const std::vector<int> more = peak_inflight(combined(PipelineSchedule::interleaved, 2, 4, 2));
  CHECK(more == std::vector<int>{plain[0] + 1, plain[1] + 1});
}

TEST_CASE("combined orders run through the engine without deadlock at the plain makespans") {
  // Built by the standalone pipeline builder (pairs emitted forward then backward), free p2p,
  // fixed F, B, W per microbatch through a rank's share.
  const auto run = [](const PipelineShape& shape) {
    PipelineConfig c;
    c.shape = shape;
    c.time_f = 1200e-9;
    c.time_b = 1200e-9;
    c.time_w = 600e-9;
    c.p2p_time = 0;
    Program prog = build_pipeline(c);
    const CommPlan plan = validate_program(prog);  // matching + deadlock check
    const Durations d = estimate_durations(prog, plan, load_hardware("h100-sxm"));
    return compute_metrics(prog, plan, simulate(prog, plan, d)).makespan;
  };
  // One rank: m(F+B+W), nothing idles.
  for (int m : {1, 2, 5}) {
    CHECK(run(combined(PipelineSchedule::one_f_one_b, 1, m)) == m * 3000);
  }
  // Interleaved, v = 2: the plain order's m(F+B+W) + (p-1)(F+B+W)/v (ARCHITECTURE.md §4.2); the
  // extra warm-up forward changes which forward pairs with which backward, not the bubble (NVIDIA's
  // "1F1B MoE A2A computing overlap" blog: the bubble rate of interleaved 1F1B is kept).
  for (int p : {2, 4}) {
    for (int m : {2 * p, 3 * p}) {
      CAPTURE(p);
      CAPTURE(m);
      const Nanos want = m * 3000 + (p - 1) * 3000 / 2;
      CHECK(run(combined(PipelineSchedule::interleaved, p, m, 2)) == want);
    }
  }
  // Every valid interleaved shape with g = p (m a multiple of p, Megatron's m mod g rule) builds
  // without deadlock (run() checks), and from m = 2p on at the plain order's makespan. At m = p
  // the extra warm-up forward turns some ranks into all-forward-then-all-backward (Megatron's
  // all-warm-up case), another order.
  for (int p : {2, 3, 4}) {
    for (int v : {2, 3}) {
      for (int m = p; m <= 3 * p; m += p) {
        CAPTURE(p);
        CAPTURE(v);
        CAPTURE(m);
        const Nanos got = run(combined(PipelineSchedule::interleaved, p, m, v));
        if (m >= 2 * p) CHECK(got == run(PipelineShape{PipelineSchedule::interleaved, p, m, v, 0}));
      }
    }
  }
}

TEST_CASE("combined 1F1B is refused where Megatron does not run it") {
  // With a pipeline Megatron asks for virtual stages; gpipe and the zero-bubble orders have no
  // combined form.
  CHECK_THROWS_AS(pipeline_orders(combined(PipelineSchedule::one_f_one_b, 2, 4)), InputError);
  CHECK_THROWS_AS(pipeline_orders(combined(PipelineSchedule::gpipe, 1, 4)), InputError);
  CHECK_THROWS_AS(pipeline_orders(combined(PipelineSchedule::zb_h1, 1, 4)), InputError);
  CHECK_NOTHROW(pipeline_orders(combined(PipelineSchedule::one_f_one_b, 1, 4)));
}
