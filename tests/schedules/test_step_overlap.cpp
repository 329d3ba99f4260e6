#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <variant>
#include <vector>

#include "schedules/memory_model.hpp"
#include "schedules/pipeline_orders.hpp"
#include "schedules/training_step.hpp"
#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/run.hpp"
#include "sim/step_metrics.hpp"
#include "sim/time.hpp"
#include "tests/schedules/device_hardware.hpp"
#include "tests/schedules/tiny_moe.hpp"

using namespace meshsim;
using meshsim::test::plan;
using meshsim::test::tiny_moe;

TEST_CASE("step moe: --overlap-moe-comm runs each all-to-all beside the other part's compute") {
  // dualpipev on 2 pipeline ranks, 8 microbatches: its overlapped pairs interleave at the EP
  // collectives. The same ops are emitted (another order); an all-to-all of one (microbatch,
  // chunk) now runs while a compute kernel of the other part runs, and the step is not slower.
  const HardwareProfile hw = testing::device_hardware();
  TransformerModel m = tiny_moe(5, 1);
  m.moe->expert_ffn = 1024;
  StepPlan p = plan(1, 2, 8, 8, 64);
  p.schedule = PipelineSchedule::dualpipev;
  const auto plain = run_simulation(build_training_step(m, p, hw.gpus_per_node), hw);
  p.moe.overlap_comm = true;
  const auto overlapped = run_simulation(build_training_step(m, p, hw.gpus_per_node), hw);
  CHECK(overlapped.program.ops.size() == plain.program.ops.size());
  CHECK(overlapped.metrics.makespan <= plain.metrics.makespan);
  const auto beside_other_compute = [](const SimulationResult& r) {
    int n = 0;
    const Program& prog = r.program;
    for (std::size_t i = 0; i < prog.ops.size(); ++i) {
      const Op& a = prog.ops[i];
      if (a.name.find("all-to-all") == std::string::npos) continue;
      const OpTiming& ta = r.timeline.ops[i];
      for (std::size_t j = 0; j < prog.ops.size(); ++j) {
        const Op& k = prog.ops[j];
        const bool same_part =
            k.labels.microbatch == a.labels.microbatch && k.labels.chunk == a.labels.chunk;
        if (k.rank != a.rank || !k.is_compute() || same_part) {
          continue;
        }
        const OpTiming& tk = r.timeline.ops[j];
        if (tk.start < ta.end && ta.comm_start < tk.end) {
          ++n;
          break;
        }
      }
    }
    return n;
  };
  CHECK(beside_other_compute(plain) == 0);
  CHECK(beside_other_compute(overlapped) > 0);
  // 1f1b with a pipeline has no pairs (Megatron asks for virtual stages).
  p.schedule = PipelineSchedule::one_f_one_b;
  CHECK_THROWS_AS(check_step_plan(m, p), InputError);
}

namespace {

// Per rank (averaged over the ranks with ops, as time_breakdown averages): the EP collectives'
// time, from rendezvous to end, of the passes that run alone in the combined 1F1B — the rank's
// warm-up forwards and cool-down backwards, the actions of its order that are not
// forward_backward pairs (Megatron's combined_1f1b_schedule_for_no_pipelining: the first forward
// and the last backward "executed alone, no a2a overlapping"). Nothing computes beside them (the
// next pass's compute is queued behind the kernels waiting for them): a lower bound of the exposed
// EP communication.
double unpaired_ep_seconds(const SimulationResult& r, const StepPlan& p) {
  const auto orders = pipeline_orders(step_shape(p));
  std::vector<std::set<std::tuple<int, int, Phase>>> alone(orders.size());
  for (std::size_t pr = 0; pr < orders.size(); ++pr) {
    for (const PipeAction& a : orders[pr]) {
      if (a.work == PipeWork::forward) alone[pr].insert({a.microbatch, a.chunk, Phase::fwd});
      if (a.work == PipeWork::backward) alone[pr].insert({a.microbatch, a.chunk, Phase::bwd});
    }
  }
  const Program& prog = r.program;
  std::vector<bool> active(static_cast<std::size_t>(prog.world_size()), false);
  Nanos total = 0;
  for (std::size_t i = 0; i < prog.ops.size(); ++i) {
    const Op& op = prog.ops[i];
    active[static_cast<std::size_t>(op.rank)] = true;
    const auto* call = std::get_if<CollectiveCall>(&op.body);
    if (call == nullptr || prog.groups[static_cast<std::size_t>(call->group)].dim != "ep") {
      continue;
    }
    const auto pr = static_cast<std::size_t>(op.rank / (p.tp * p.cp * p.dp));  // pp outermost
    if (alone[pr].count({op.labels.microbatch, op.labels.chunk, op.labels.phase}) != 0) {
      total += r.timeline.ops[i].end - r.timeline.ops[i].comm_start;
    }
  }
  const auto ranks = std::count(active.begin(), active.end(), true);
  return ns_to_seconds(total) / static_cast<double>(ranks);
}

double exposed_ep(const SimulationResult& r) {
  return time_breakdown(r.program, r.timeline, r.metrics.makespan).exposed_of("ep");
}

}  // namespace

TEST_CASE(
    "step moe: --overlap-moe-comm on 1f1b (pp 1) and interleaved is Megatron's combined 1F1B") {
  const HardwareProfile hw = testing::device_hardware();
  TransformerModel m = tiny_moe(8, 1);
  m.moe->expert_ffn = 1024;
  // pp 1: 8 microbatches, F0, seven (F k+1, B k) pairs, B7.
  StepPlan one = plan(1, 1, 8, 8, 64);
  // interleaved: pp 2 x vp 2 stages of 2 layers, 8 microbatches.
  StepPlan inter = plan(1, 2, 4, 4, 32);
  inter.schedule = PipelineSchedule::interleaved;
  inter.vp = 2;
  for (StepPlan p : {one, inter}) {
    CAPTURE(to_string(p.schedule));
    const auto plain = run_simulation(build_training_step(m, p, hw.gpus_per_node), hw);
    p.moe.overlap_comm = true;
    const auto overlapped = run_simulation(build_training_step(m, p, hw.gpus_per_node), hw);
    // The same kernels and collectives, in another order (the pipeline's batched exchanges
    // regroup around the extra warm-up forward).
    const auto non_p2p = [](const SimulationResult& r) {
      return std::count_if(r.program.ops.begin(), r.program.ops.end(),
                           [](const Op& op) { return !std::holds_alternative<P2PCall>(op.body); });
    };
    CHECK(non_p2p(overlapped) == non_p2p(plain));
    // One more chunk-activation in flight on every pipeline rank (the extra warm-up forward).
    const auto inflight = [&](const StepPlan& q) {
      std::vector<int> out;
      for (const auto& st : estimate_memory(m, memory_plan(q), hw).stages)
        out.push_back(st.inflight);
      return out;
    };
    StepPlan off_plan = p;
    off_plan.moe.overlap_comm = false;
    const std::vector<int> before = inflight(off_plan), after = inflight(p);
    REQUIRE(before.size() == after.size());
    for (std::size_t r = 0; r < before.size(); ++r) CHECK(after[r] == before[r] + 1);
    // exposed(on) <= exposed(off): the pairs only add compute beside each all-to-all (and here
    // strictly: some of it hides).
    const double on = exposed_ep(overlapped), off = exposed_ep(plain);
    CHECK(on < off);
    // exposed(on) >= the all-to-all of the passes that run alone: max(0, a2a - overlappable
    // compute) with no compute to overlap them.
    const double alone = unpaired_ep_seconds(overlapped, p);
    CHECK(alone > 0);
    CHECK(on >= alone * (1 - 1e-9));
  }
}

TEST_CASE(
    "step moe: --delay-wgrad-compute launches the dispatch backward before the expert wgrads") {
  const HardwareProfile hw = testing::device_hardware();
  TransformerModel m = tiny_moe(3);
  StepPlan p = plan(1, 1, 4, 4, 16);
  p.moe.overlap_comm = true;
  p.moe.delay_wgrad = true;
  const Program prog = build_training_step(m, p, hw.gpus_per_node);
  int checked = 0;
  for (const Op& a : prog.ops) {
    if (a.name.find("dispatch bwd all-to-all") == std::string::npos) continue;
    // Its deps are input-gradient ops and collectives, never a weight gradient (Megatron's
    // mlp.backward_dw runs after mlp.backward, beside the all-to-all).
    for (const OpId d : prog.deps(a.id))
      CHECK(prog.ops[static_cast<std::size_t>(d)].labels.phase != Phase::wgrad);
    // The same layer's expert wgrads of the same microbatch come after it in launch order.
    for (const Op& k : prog.ops) {
      if (k.rank == a.rank && k.labels.layer == a.labels.layer &&
          k.labels.microbatch == a.labels.microbatch && k.name.find("expert 0 down wgrad") == 0) {
        CHECK(k.id > a.id);
        ++checked;
      }
    }
  }
  CHECK(checked > 0);
}

TEST_CASE("step moe: the combined 1F1B is refused where Megatron-Core refuses it") {
  const TransformerModel m = tiny_moe(4);
  StepPlan p = plan(1, 1, 4, 4, 16);
  p.moe.overlap_comm = true;
  CHECK_NOTHROW(check_step_plan(m, p));
  // Each change alone is refused, by the rule that names it.
  const auto refused = [&](auto change, std::string_view word) {
    StepPlan q = p;
    change(q);
    std::string what;
    try {
      check_step_plan(m, q);
    } catch (const InputError& e) {
      what = e.what();
    }
    CAPTURE(what);
    CHECK(what.find(word) != std::string::npos);
  };
  refused([](StepPlan& q) { q.pp = 2; }, "virtual stages");  // a pipeline without vp
  refused([](StepPlan& q) { q.schedule = PipelineSchedule::gpipe; }, "schedule");
  refused([](StepPlan& q) { q.moe.ep = 1; }, "`ep` > 1");
  refused([](StepPlan& q) { q.moe.dispatcher = TokenDispatcher::allgather; }, "not allgather");
  refused([](StepPlan& q) { q.recompute = Recompute::full; }, "full recompute");
  refused([](StepPlan& q) { q.dtype = DType::fp32; }, "bf16 or fp16");
  refused(
      [](StepPlan& q) {
        q.moe.overlap_comm = false;
        q.moe.delay_wgrad = true;
      },
      "needs `overlap_moe_comm`");
  refused(
      [](StepPlan& q) {
        q.schedule = PipelineSchedule::dualpipev;
        q.moe.delay_wgrad = true;
      },
      "dualpipev already defers");
}
