#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "schedules/training_step.hpp"
#include "sim/comm_volume.hpp"
#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/run.hpp"
#include "sim/step_metrics.hpp"
#include "tests/schedules/device_hardware.hpp"
#include "tests/schedules/tiny_moe.hpp"

using namespace meshsim;
using meshsim::test::count_named;
using meshsim::test::dim_index;
using meshsim::test::plan;
using meshsim::test::tiny_moe;

TEST_CASE(
    "step moe: the ep bytes per rank equal the closed form (alltoall, uniform, tp = cp = 1)") {
  // moe_layers x microbatches x 4 (dispatch, combine, forward and backward) x tokens x top_k x
  // hidden x bytes x (ep - 1) / ep, tokens = mbs x seq.
  const HardwareProfile hw = testing::device_hardware();
  for (const int ep : {2, 4, 8}) {
    for (const int pp : {1, 2}) {
      CAPTURE(ep);
      CAPTURE(pp);
      const TransformerModel m = tiny_moe(5);  // 4 MoE layers
      StepPlan p = plan(1, pp, 8, ep, 64);     // 8 microbatches of 1 x 32 tokens
      const Program prog = build_training_step(m, p, hw.gpus_per_node);
      // Averaged over the built ranks (one per stage): 4 MoE layers in all, 2 per stage at pp 2
      // (layers 0-2 and 3-4).
      const double expected = 4.0 / pp * 8 * 4 * 32 * 2 * 64 * 2 * (ep - 1.0) / ep;
      CHECK(comm_bytes_per_rank(prog)[dim_index("ep")] == doctest::Approx(expected).epsilon(1e-4));
    }
  }
}

TEST_CASE("step moe: an MoE layer's ops, and none of them in dense layers") {
  const HardwareProfile hw = testing::device_hardware();
  const TransformerModel m = tiny_moe(3, 1);
  const Program prog = build_training_step(m, plan(1, 1, 4, 4, 4), hw.gpus_per_node);
  // 1 built rank (dp folded), 1 microbatch, 2 MoE layers: forward dispatch + combine, backward
  // combine bwd + dispatch bwd, one all-to-all each.
  CHECK(count_named(prog, "all-to-all") == 2 * 4);
  CHECK(count_named(prog, "router") >= 2 * 2);
  // 8 experts / ep 4 = 2 local experts, each an up and a down GEMM forward.
  CHECK(count_named(prog, "expert 0 up") >= 2);
  CHECK(count_named(prog, "expert 2 up") == 0);
  CHECK(count_named(prog, "shared up gemm") == 2);
  CHECK(count_named(prog, "mlp up gemm") == 1);  // the dense first layer
  // expert gradients over the expert-data-parallel group: edp = 4 / 4 = 1: none; ep 2: edp 2
  CHECK(count_named(prog, "expert grad") == 0);
  const Program p2 = build_training_step(m, plan(1, 1, 4, 2, 4), hw.gpus_per_node);
  CHECK(count_named(p2, "expert grad") == 1);
  const SimulationResult r = run_simulation(p2, hw);
  CHECK(r.metrics.makespan > 0);
}

TEST_CASE("step moe: folded and unfolded steps take the same time under uniform routing") {
  const HardwareProfile hw = testing::device_hardware();
  const TransformerModel m = tiny_moe(3, 1);
  for (const int tp : {1, 2}) {
    CAPTURE(tp);
    StepPlan p = plan(tp, 2, 4, 4, 16);
    const auto folded = run_simulation(build_training_step(m, p, hw.gpus_per_node), hw);
    p.fold_dp = false;
    p.fold_tp = false;
    const auto whole = run_simulation(build_training_step(m, p, hw.gpus_per_node), hw);
    CHECK(folded.metrics.makespan == whole.metrics.makespan);
  }
}

TEST_CASE("step moe: skewed routing slows the experts; etp adds ETP collectives") {
  const HardwareProfile hw = testing::device_hardware();
  TransformerModel m = tiny_moe(3);
  m.moe->expert_ffn = 4096;  // experts dominate
  StepPlan p = plan(1, 1, 8, 8, 8);
  const auto uniform = run_simulation(build_training_step(m, p, hw.gpus_per_node), hw);
  p.moe.routing = parse_routing("zipf:1.5");
  const auto skewed = run_simulation(build_training_step(m, p, hw.gpus_per_node), hw);
  CHECK(skewed.metrics.makespan > uniform.metrics.makespan);
  // tp 2 x dp 4 = 8 ranks per stage hold etp 2 x ep 4: an ETP all-gather and reduce-scatter
  // around the experts, forward and backward.
  StepPlan e = plan(2, 1, 4, 4, 4);
  e.moe.etp = 2;
  const Program pe = build_training_step(m, e, hw.gpus_per_node);
  CHECK(count_named(pe, "etp all-gather") == 2 * 2);
  CHECK(count_named(pe, "etp reduce-scatter") == 2 * 2);
  // etp 2 x ep 8 = 16 does not divide tp x cp x dp = 8.
  e.moe.ep = 8;
  CHECK_THROWS_AS(check_step_plan(m, e), InputError);
}

TEST_CASE("step moe: --moe-shared-expert-overlap runs the shared experts beside the all-to-alls") {
  const HardwareProfile hw = testing::device_hardware();
  TransformerModel m = tiny_moe(3, 1);
  m.moe->shared_ffn = 2048;  // shared experts worth overlapping
  StepPlan p = plan(1, 1, 8, 8, 8);
  const Program plain = build_training_step(m, p, hw.gpus_per_node);
  p.moe.shared_expert_overlap = true;
  const Program overlapped = build_training_step(m, p, hw.gpus_per_node);
  // The same ops, emitted in another order.
  CHECK(overlapped.ops.size() == plain.ops.size());
  // Forward: the shared up GEMM follows the dispatch all-to-all's launch without waiting for it;
  // the first expert GEMM waits for it. Backward: the shared down GEMM's input gradient follows
  // the combine's backward all-to-all without waiting for it.
  const auto first = [&](std::string_view name) {
    for (const Op& op : overlapped.ops) {
      if (op.name == name) return op.id;
    }
    FAIL("no op named " << name);
    return OpId{-1};
  };
  const auto waits_for = [&](OpId op, OpId on) {
    const auto deps = overlapped.deps(op);
    return std::find(deps.begin(), deps.end(), on) != deps.end();
  };
  const OpId dispatch = first("dispatch all-to-all");
  const OpId shared_up = first("shared up gemm");
  CHECK(shared_up > dispatch);
  CHECK_FALSE(waits_for(shared_up, dispatch));
  CHECK(waits_for(first("expert 0 up"), dispatch));
  const OpId combine_bwd = first("combine bwd all-to-all");
  const OpId shared_down_dgrad = first("shared down dgrad");
  CHECK(shared_down_dgrad > combine_bwd);
  CHECK_FALSE(waits_for(shared_down_dgrad, combine_bwd));
  // Hiding compute behind the all-to-alls can only shorten the step here (no other change).
  CHECK(run_simulation(overlapped, hw).metrics.makespan <
        run_simulation(plain, hw).metrics.makespan);
}

TEST_CASE("step moe: --moe-shared-expert-overlap is refused without shared experts or alltoall") {
  StepPlan p = plan(1, 1, 8, 8, 8);
  p.moe.shared_expert_overlap = true;
  CHECK_NOTHROW(check_step_plan(tiny_moe(3, 1), p));
  CHECK_THROWS_WITH_AS(check_step_plan(tiny_moe(3, 0), p),
                       doctest::Contains("needs a model with shared experts"), InputError);
  for (const TokenDispatcher d : {TokenDispatcher::allgather, TokenDispatcher::flex}) {
    p.moe.dispatcher = d;
    CHECK_THROWS_WITH_AS(check_step_plan(tiny_moe(3, 1), p),
                         doctest::Contains("needs `moe_token_dispatcher` alltoall"), InputError);
  }
}

TEST_CASE("step moe: with etp > 1 the shared up GEMM goes before the ETP all-gather") {
  TransformerModel m = tiny_moe(3, 1);
  StepPlan p = plan(2, 1, 4, 4, 4);  // tp 2 x dp 4 = etp 2 x ep 4
  p.moe.etp = 2;
  p.moe.shared_expert_overlap = true;
  const Program prog = build_training_step(m, p, 8);
  OpId a2a = -1, gather = -1, shared = -1;
  for (const Op& op : prog.ops) {
    if (a2a < 0 && op.name == "dispatch all-to-all") a2a = op.id;
    if (gather < 0 && op.name == "dispatch etp all-gather") gather = op.id;
    if (shared < 0 && op.name.find("shared up") != std::string::npos) shared = op.id;
  }
  REQUIRE(a2a >= 0);
  REQUIRE(gather > a2a);
  // Megatron's dispatch_postprocess: linear_fc1_forward_and_act before the ETP gather.
  CHECK(shared > a2a);
  CHECK(shared < gather);
}

TEST_CASE("step moe: expert groups placed unevenly on the nodes build every rank") {
  // 24 ranks of one stage on 8-GPU nodes, ep 6: the group 0-5 sits on one node, 6-11 on two.
  CHECK_FALSE(expert_groups_fold_evenly(1, 1, 24, 1, 1, 6, 8));
  CHECK(expert_groups_fold_evenly(1, 1, 24, 1, 1, 8, 8));
  CHECK(expert_groups_fold_evenly(1, 1, 32, 1, 1, 16, 8));  // two nodes each
  const HardwareProfile hw = testing::device_hardware();
  TransformerModel m = tiny_moe(3);
  m.moe->experts = 12;
  StepPlan p = plan(1, 1, 24, 6, 48);
  const auto folded = run_simulation(build_training_step(m, p, 8), hw);
  p.fold_dp = false;
  const auto whole = run_simulation(build_training_step(m, p, 8), hw);
  CHECK(folded.metrics.makespan == whole.metrics.makespan);
  CHECK(folded.program.ops.size() == whole.program.ops.size());
}

TEST_CASE("step moe: flex needs etp x ep > 1") {
  StepPlan p = plan(1, 1, 8, 1, 8);
  p.moe.dispatcher = TokenDispatcher::flex;
  CHECK_THROWS_WITH_AS(check_step_plan(tiny_moe(3), p),
                       doctest::Contains("flex needs etp x ep > 1"), InputError);
  p.moe.ep = 2;
  CHECK_NOTHROW(check_step_plan(tiny_moe(3), p));
}

namespace {

const Op& op_named(const Program& p, std::string_view name) {
  const auto it =
      std::find_if(p.ops.begin(), p.ops.end(), [&](const Op& op) { return op.name == name; });
  REQUIRE(it != p.ops.end());
  return *it;
}

}  // namespace

TEST_CASE("step moe: the host waits where Megatron-Core's dispatcher reads the token counts") {
  // megatron/core/transformer/moe/token_dispatcher.py (MoEAlltoAllTokenDispatcher.preprocess):
  // dropless with ep > 1 syncs "before_ep_alltoall", with a capacity factor "before_permutation_1";
  // the counts come from the routing, whose last op here is the aux loss.
  const HardwareProfile hw = testing::device_hardware();
  const TransformerModel m = tiny_moe(3, 1);
  StepPlan p = plan(1, 1, 4, 4, 4);
  Program prog = build_training_step(m, p, hw.gpus_per_node);
  CHECK(prog.host_issue);
  const Op& aux = op_named(prog, "aux loss");
  const Op& dispatch = op_named(prog, "dispatch all-to-all");
  CHECK(dispatch.host_wait == aux.id);
  CHECK(op_named(prog, "permute").host_wait == -1);

  p.moe.capacity_factor = 1.0;
  prog = build_training_step(m, p, hw.gpus_per_node);
  CHECK(op_named(prog, "permute").host_wait == op_named(prog, "aux loss").id);
  CHECK(op_named(prog, "dispatch all-to-all").host_wait == -1);

  // The allgather dispatcher reads the gathered counts (`.cpu()`) before its experts.
  p.moe.capacity_factor = 0;
  p.moe.dispatcher = TokenDispatcher::allgather;
  prog = build_training_step(m, p, hw.gpus_per_node);
  const Op& gathered = op_named(prog, "dispatch all-gather");
  const auto waits = std::count_if(prog.ops.begin(), prog.ops.end(),
                                   [&](const Op& op) { return op.host_wait == gathered.id; });
  CHECK(waits == 1);

  // DeepEP's dispatch call spins on the received counts before it launches its dispatch kernel
  // (fused_a2a.py): the host waits for the routing right before the dispatch.
  p.moe.dispatcher = TokenDispatcher::flex;
  prog = build_training_step(m, p, hw.gpus_per_node);
  const OpId routed = op_named(prog, "aux loss").id;
  const auto waiting = std::find_if(prog.ops.begin(), prog.ops.end(),
                                    [&](const Op& op) { return op.host_wait == routed; });
  REQUIRE(waiting != prog.ops.end());
  CHECK(waiting->id == routed + 1);
  CHECK(waiting->name.find("dispatch") != std::string::npos);
}
