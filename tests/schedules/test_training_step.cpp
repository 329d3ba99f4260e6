#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>

#include "schedules/training_step.hpp"
#include "sim/comm_plan.hpp"
#include "sim/cost_model.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/metrics.hpp"
#include "sim/run.hpp"
#include "tests/case_sample.hpp"
#include "tests/schedules/tiny_models.hpp"

using namespace meshsim;

namespace {

TransformerModel tiny(int layers) {
  return test::tiny_gqa_model(layers);
}

using test::plan_of;
using test::step_time;

struct Counts {
  std::map<std::string, int> by_kind;  // kernel kind or collective kind, per (phase)
  int compute = 0;
  int comm = 0;
};

// Ops of `rank` on `layer` in `phase`, by kernel/collective kind.
Counts count(const Program& prog, int rank, int layer, Phase phase) {
  Counts c;
  for (const Op& op : prog.ops) {
    if (op.rank != rank || op.labels.layer != layer) continue;
    const bool wgrad_as_bwd = phase == Phase::bwd && op.labels.phase == Phase::wgrad;
    if (op.labels.phase != phase && !wgrad_as_bwd) continue;
    if (const auto* k = std::get_if<KernelCall>(&op.body)) {
      ++c.compute;
      ++c.by_kind[std::string(to_string(k->kind))];
    } else if (const auto* coll = std::get_if<CollectiveCall>(&op.body)) {
      ++c.comm;
      ++c.by_kind[std::string(to_string(coll->kind))];
    } else {
      ++c.comm;
      ++c.by_kind["p2p"];
    }
  }
  return c;
}

}  // namespace

TEST_CASE("training step: ops of one layer, tp 2, pp 1, cp 1, by hand") {
  const TransformerModel m = tiny(1);
  StepPlan p = plan_of(2, 1, 1, 1, 1);
  const HardwareProfile hw = load_hardware("h100-sxm");
  {
    // Sequence parallel. Forward: norm, qkv gemm, RoPE, attention, proj gemm, residual add, norm,
    // up gemm, activation, down gemm, residual add = 11 kernels (4 gemms); all-gather before qkv
    // and up, reduce-scatter after proj and down = 4 collectives.
    const Program prog = build_training_step(m, p, hw.gpus_per_node);
    Counts f = count(prog, 0, 0, Phase::fwd);
    CHECK(f.compute == 11);
    CHECK(f.by_kind["accumulate"] == 2);
    CHECK(f.by_kind["gemm"] == 4);
    CHECK(f.by_kind["attention_fwd"] == 1);
    CHECK(f.by_kind["all_gather"] == 2);
    CHECK(f.by_kind["reduce_scatter"] == 2);
    CHECK(f.comm == 4);
    // Backward: 4 x (dgrad + wgrad) gemms, activation bwd, 2 norm bwd, attention bwd, RoPE bwd,
    // 2 residual grads (no dropout in tiny) = 15 kernels; row layers all-gather dy (2), column
    // layers all-gather x and reduce-scatter dx (2 + 2) = 6 collectives.
    Counts b = count(prog, 0, 0, Phase::bwd);
    CHECK(b.compute == 15);
    CHECK(b.by_kind["gemm"] == 8);
    CHECK(b.by_kind["attention_bwd"] == 1);
    CHECK(b.by_kind["all_gather"] == 4);
    CHECK(b.by_kind["reduce_scatter"] == 2);
    CHECK(b.comm == 6);
    // Whole rank: + embedding, final norm, head gemm, loss (fwd); head dgrad + wgrad with its
    // all-gather and reduce-scatter, final norm bwd, embedding grad (bwd); grad-buffer memset,
    // grad norm and optimizer:
    // 11 + 4 + 15 + 6 + 4 + 1 (head AG fwd) + 2 + 2 + 1 + 1 + 3 = 50 ops, no p2p (pp 1), no DP.
    int total = 0;
    for (const Op& op : prog.ops) total += op.rank == 0 ? 1 : 0;
    CHECK(total == 50);
    // GEMM shapes: qkv n = (h + 2 h_kv) / t = (64 + 2 x 32) / 2 = 64, up n = 2f / t = 128.
    int qkv = 0, up = 0;
    for (const Op& op : prog.ops) {
      if (op.rank != 0 || !op.is_compute()) continue;
      const auto& k = std::get<KernelCall>(op.body);
      if (op.name == "qkv gemm") qkv = static_cast<int>(std::get<GemmShape>(k.shape).n);
      if (op.name == "mlp up gemm") up = static_cast<int>(std::get<GemmShape>(k.shape).n);
    }
    CHECK(qkv == 64);
    CHECK(up == 128);
    // Folded TP builds rank 0 only; unfolded, rank 1 runs the same 50 ops.
    CHECK(
        std::none_of(prog.ops.begin(), prog.ops.end(), [](const Op& op) { return op.rank == 1; }));
    StepPlan unfolded = p;
    unfolded.fold_tp = false;
    const Program all = build_training_step(m, unfolded, hw.gpus_per_node);
    for (int r : {0, 1}) {
      CAPTURE(r);
      CHECK(std::count_if(all.ops.begin(), all.ops.end(),
                          [r](const Op& op) { return op.rank == r; }) == 50);
    }
  }
  {
    // Without sequence parallelism: all-reduce after the row layers (fwd) and of the column
    // layers' dx (bwd); no all-gathers.
    p.sequence_parallel = false;
    const Program prog = build_training_step(m, p, hw.gpus_per_node);
    Counts f = count(prog, 0, 0, Phase::fwd);
    CHECK(f.comm == 2);
    CHECK(f.by_kind["all_reduce"] == 2);
    Counts b = count(prog, 0, 0, Phase::bwd);
    CHECK(b.comm == 2);
    CHECK(b.by_kind["all_reduce"] == 2);
  }
  {
    // Full recompute: the layer's forward again (11 kernels, 4 collectives) before its backward.
    p.sequence_parallel = true;
    p.recompute = Recompute::full;
    Counts b = count(build_training_step(m, p, hw.gpus_per_node), 0, 0, Phase::bwd);
    CHECK(b.compute == 15 + 11);
    CHECK(b.comm == 6 + 4);
    p.recompute = Recompute::selective;  // the attention core only
    Counts s = count(build_training_step(m, p, hw.gpus_per_node), 0, 0, Phase::bwd);
    CHECK(s.compute == 15 + 1);
    CHECK(s.by_kind["attention_fwd"] == 1);
  }
}

TEST_CASE("training step: the CP ring inside a layer (zigzag, cp 2, p2p)") {
  const TransformerModel m = tiny(1);
  StepPlan p = plan_of(1, 1, 2, 1, 1);
  const Program prog = build_training_step(m, p, load_hardware("h100-sxm").gpus_per_node);
  for (int r = 0; r < 2; ++r) {
    // Forward: N = 2 steps, both compute under zigzag, one K/V exchange, one merge, one cast.
    Counts f = count(prog, r, 0, Phase::fwd);
    CHECK(f.by_kind["attention_fwd"] == 2);
    CHECK(f.by_kind["lse_merge"] == 1);
    CHECK(f.by_kind["p2p"] == 1);
    // Backward: N - 1 = 1 K/V exchange and N = 2 dK/dV exchanges (ARCHITECTURE.md §6).
    Counts b = count(prog, r, 0, Phase::bwd);
    CHECK(b.by_kind["attention_bwd"] == 2);
    CHECK(b.by_kind["p2p"] == 3);
  }
}

TEST_CASE("training step: step time with unit compute and free communication, tp 2, pp 2") {
  // Two layers over pp 2 (one per stage), one microbatch, 1F1B: every kernel 1 us, every
  // transfer and collective 0. The step is the chain
  //   memset(stage 0) + F(stage 0) + F(stage 1) + B(stage 1) + B(stage 0) + grad norm and
  //   optimizer(stage 0) = 1 + (1 embedding + 11) + (11 + final norm + head + loss) + (head dgrad
  //   + wgrad + final norm bwd + 15) + (15 + embedding grad) + 2 = 1 + 12 + 14 + 18 + 16 + 2
  //   = 63 kernels -> 63 us (stage 1's memset runs while stage 0 works); a layer's 11 forward
  //   and 15 backward kernels as counted in the test above.
  const TransformerModel m = tiny(2);
  const StepPlan p = plan_of(2, 2, 1, 1, 1);
  const Program prog = build_training_step(m, p, load_hardware("h100-sxm").gpus_per_node);
  const CommPlan plan = validate_program(prog);
  Durations d = estimate_durations(prog, plan, load_hardware("h100-sxm"));
  for (std::size_t i = 0; i < prog.ops.size(); ++i) d.ops[i] = prog.ops[i].is_compute() ? 1000 : 0;
  for (auto& t : d.transfers) t = 0;
  for (auto& c : d.collectives) c = 0;
  d.comm_interference = 1.0;
  d.host.clear();  // the device's chain only (the host issue clock is off)
  const Timeline tl = simulate(prog, plan, d);
  CHECK(tl.makespan == 63000);
}

TEST_CASE("training step: plan rejections name the rule") {
  const TransformerModel m = tiny(4);
  const auto message = [&](const StepPlan& p) {
    try {
      check_step_plan(m, p);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(message(plan_of(3, 1, 1, 1, 1)).find("`tp` 3 must divide the model's heads") == 0);
  CHECK(message(plan_of(1, 1, 1, 2, 3)).find("`gbs` 3 must be divisible by `dp` x `mbs`") == 0);
  StepPlan zig = plan_of(1, 1, 3, 1, 1);  // 32 tokens over 2 x 3 zigzag chunks
  CHECK(message(zig).find("with `cp_variant` zigzag") != std::string::npos);
  StepPlan sp = plan_of(2, 1, 4, 1, 1);  // zigzag: 32 % (2 x 4) = 0; 32 / 4 = 8, % tp 2 = 0
  CHECK(message(sp) == "accepted");
  sp.cp = 2;
  sp.cp_variant = RingVariant::ring;
  sp.seq = 34;  // 34 / 2 = 17 tokens per CP rank: not divisible by tp 2 under SP
  CHECK(message(sp).find("`seq` / `cp` = 17 must be divisible by `tp` 2") == 0);
  sp.sequence_parallel = false;  // without SP the tokens need not split over tp
  CHECK(message(sp) == "accepted");
  StepPlan vp = plan_of(1, 2, 1, 1, 4);
  vp.vp = 2;
  CHECK(message(vp).find("`vp` 2 needs `schedule` interleaved") == 0);
  StepPlan layers = plan_of(1, 8, 1, 1, 8);  // 4 layers over 8 stages
  CHECK(message(layers).find("layers") != std::string::npos);
  StepPlan dual = plan_of(1, 2, 1, 1, 2);  // DualPipeV needs m >= 2p
  dual.schedule = PipelineSchedule::dualpipev;
  CHECK(message(dual) != "accepted");
  CHECK(message(plan_of(0, 1, 1, 1, 1)).find("`tp`") != std::string::npos);
  CHECK(world_size(plan_of(2, 3, 4, 5, 5)) == 120);
  CHECK(microbatches(plan_of(2, 2, 1, 4, 32)) == 8);
}

TEST_CASE("training step: folded data parallelism gives the unfolded step time") {
  // Folding replaces the other replicas' (identical) programs by a fixed collective time computed
  // for the whole group at its real placement; the analytical network has no contention, so the
  // step times must be equal to the nanosecond. Two placements: one node (8 GPUs per node), and
  // 2 GPUs per node so that DP and PP cross nodes.
  const TransformerModel m = tiny(2);
  for (int gpn : {8, 2}) {
    HardwareProfile hw = load_hardware("h100-sxm");
    hw.gpus_per_node = gpn;
    for (bool dist : {false, true}) {
      for (int cp : {1, 2}) {
        CAPTURE(gpn);
        CAPTURE(dist);
        CAPTURE(cp);
        StepPlan p = plan_of(2, 2, cp, 2, 8);  // m = 8 / (2 x 1) = 4
        p.distributed_optimizer = dist;
        p.dp_buckets = 2;
        const Nanos folded = step_time(m, p, hw);
        p.fold_dp = false;
        const Nanos unfolded = step_time(m, p, hw);
        CHECK(folded == unfolded);
        CHECK(folded > 0);
      }
    }
  }
}

TEST_CASE("training step: folding holds for every pipeline schedule") {
  // Same argument as above; the schedules differ in when each pipeline rank's last weight
  // gradient of a chunk comes and in their exchanges (explicit commits for zb-v and dualpipev).
  const TransformerModel m = tiny(4);
  HardwareProfile hw = load_hardware("h100-sxm");
  hw.gpus_per_node = 4;  // tp x dp = 4 ranks per node: pipeline neighbours on other nodes
  for (auto s : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b,
                 PipelineSchedule::interleaved, PipelineSchedule::zb_h1, PipelineSchedule::zb_h2,
                 PipelineSchedule::zb_v, PipelineSchedule::dualpipev}) {
    CAPTURE(to_string(s));
    StepPlan p = plan_of(2, 2, 1, 2, 8);  // m = 4
    p.schedule = s;
    p.vp = s == PipelineSchedule::interleaved ? 2 : 1;
    p.distributed_optimizer = true;
    const Nanos folded = step_time(m, p, hw);
    p.fold_dp = false;
    CHECK(step_time(m, p, hw) == folded);
  }
}

TEST_CASE("training step: every schedule, rotation and recompute builds deadlock-free") {
  const TransformerModel m = tiny(4);
  const HardwareProfile hw = load_hardware("h100-sxm");
  for (auto s : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b,
                 PipelineSchedule::interleaved, PipelineSchedule::zb_h1, PipelineSchedule::zb_h2,
                 PipelineSchedule::zb_v, PipelineSchedule::dualpipev}) {
    for (auto rot : {KvRotation::p2p, KvRotation::all_gather, KvRotation::all_to_all}) {
      CAPTURE(to_string(s));
      CAPTURE(to_string(rot));
      StepPlan p = plan_of(2, 2, 2, 1, 4);  // m = 4 (DualPipeV: m >= 2p = 4)
      p.schedule = s;
      p.vp = s == PipelineSchedule::interleaved ? 2 : 1;
      p.kv_rotation = rot;
      p.recompute = rot == KvRotation::p2p ? Recompute::full : Recompute::selective;
      const Program prog = build_training_step(m, p, hw.gpus_per_node);
      CHECK_NOTHROW(validate_program(prog));
      CHECK(step_time(m, p, hw) > 0);
    }
  }
}

namespace {

// tiny() with 8 heads and 4 KV heads (head_dim 8), so that tp 4 divides them.
TransformerModel tiny_tp4(int layers) {
  TransformerModel m = tiny(layers);
  m.heads = 8;
  m.kv_heads = 4;
  return m;
}

}  // namespace

TEST_CASE("training step: folded tensor parallelism builds tp index 0 only") {
  const TransformerModel m = tiny(1);
  const HardwareProfile hw = load_hardware("h100-sxm");
  StepPlan p = plan_of(2, 2, 2, 2, 4);
  const Program folded = build_training_step(m, p, hw.gpus_per_node);
  p.fold_tp = false;
  p.fold_dp = false;
  const Program full = build_training_step(m, p, hw.gpus_per_node);
  CHECK(folded.world_size() == 16);
  CHECK(full.world_size() == 16);
  std::map<int, int> folded_ops, full_ops;
  for (const Op& op : folded.ops) ++folded_ops[op.rank];
  for (const Op& op : full.ops) ++full_ops[op.rank];
  // Built: tp index 0 (even ranks) of dp index 0 (rank / (tp x cp) even): cp 2 x pp 2 = 4 ranks,
  // each with exactly the ops of the same rank unfolded.
  CHECK(folded_ops.size() == 4);
  CHECK(full_ops.size() == 16);
  for (const auto& [rank_, n] : folded_ops) {
    const int rank = rank_;
    CAPTURE(rank);
    CHECK(rank % 2 == 0);
    CHECK((rank / 4) % 2 == 0);
    CHECK(n == full_ops[rank]);
  }
  // Every TP collective: a one-member "tp" group timed as the whole TP group (the rank and its
  // tp neighbour: tp varies fastest), with no time in the graph.
  int tp_collectives = 0;
  for (const Op& op : folded.ops) {
    const auto* c = std::get_if<CollectiveCall>(&op.body);
    if (c == nullptr || folded.groups[static_cast<std::size_t>(c->group)].dim != "tp") continue;
    ++tp_collectives;
    const Group& g = folded.groups[static_cast<std::size_t>(c->group)];
    CHECK(g.ranks == std::vector<int>{op.rank});
    CHECK(g.timed_as == std::vector<int>{op.rank, op.rank + 1});
    CHECK(op.fixed_ns == -1);
  }
  CHECK(tp_collectives > 0);
  // gpus_per_node neither a multiple nor a divisor of tp: TP ranks could sit differently, so the
  // builder does not fold TP.
  CHECK(folds_tp(plan_of(2, 1, 1, 1, 1), 8));
  CHECK(folds_tp(plan_of(4, 1, 1, 1, 1), 2));
  CHECK_FALSE(folds_tp(plan_of(2, 1, 1, 1, 1), 3));
  CHECK_FALSE(folds_tp(plan_of(1, 1, 1, 1, 1), 8));
}

TEST_CASE("training step: folded tensor parallelism gives the unfolded step time") {
  // TP ranks run identical programs in lockstep: each TP collective's rendezvous is simultaneous
  // and takes its analytical time, which the folded one-member collective is given as a fixed
  // time; CP, PP and DP traffic between the tp index 0 ranks is unchanged. Times must be equal to
  // the nanosecond, with and without DP folding, for every schedule, SP, distributed optimizer.
  int n = 0;
  for (int tp : {2, 4}) {
    const TransformerModel m = tiny_tp4(4);
    for (int gpn : {4, 2}) {
      HardwareProfile hw = load_hardware("h100-sxm");
      hw.gpus_per_node = gpn;  // 4: tp 2 groups share a node; 2: tp 4 spans two nodes
      for (int cp : {1, 2}) {
        for (int pp : {1, 2}) {
          for (auto s : {PipelineSchedule::one_f_one_b, PipelineSchedule::gpipe,
                         PipelineSchedule::interleaved, PipelineSchedule::zb_h1,
                         PipelineSchedule::zb_v, PipelineSchedule::dualpipev}) {
            if (pp == 1 && s != PipelineSchedule::one_f_one_b) continue;
            for (bool sp : {true, false}) {
              for (bool dist : {false, true}) {
                if (!test::simulated_case(n++)) continue;
                CAPTURE(tp);
                CAPTURE(gpn);
                CAPTURE(cp);
                CAPTURE(pp);
                CAPTURE(to_string(s));
                CAPTURE(sp);
                CAPTURE(dist);
                StepPlan p = plan_of(tp, pp, cp, 2, 8);  // m = 4
                p.schedule = s;
                p.vp = s == PipelineSchedule::interleaved ? 2 : 1;
                p.sequence_parallel = sp;
                p.distributed_optimizer = dist;
                p.dp_buckets = 2;
                p.recompute = sp ? Recompute::selective : Recompute::full;
                const Nanos both = step_time(m, p, hw);
                p.fold_dp = false;
                const Nanos tp_only = step_time(m, p, hw);
                p.fold_tp = false;
                const Nanos unfolded = step_time(m, p, hw);
                CHECK(both == unfolded);
                CHECK(tp_only == unfolded);
                CHECK(unfolded > 0);
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE("training step: the size estimate, and the built Program stays within it") {
  const TransformerModel m = tiny(4);
  StepPlan p = plan_of(2, 2, 2, 2, 16);  // microbatches = gbs / (dp x mbs) = 16 / 2 = 8
  // Folded (tp and dp index 0 only; 8 GPUs per node is a multiple of tp 2): built ranks =
  // pp x cp = 4; 4 x 8 microbatches x (4 layers / pp 2) x (48 + 8 cp) = 4 x 8 x 2 x 64 = 4096.
  CHECK(estimated_step_ops(m, p, 8) == 4096);
  // 3 GPUs per node is neither a multiple nor a divisor of tp 2: TP is built, 8 ranks, 8192.
  CHECK(estimated_step_ops(m, p, 3) == 8192);
  const HardwareProfile hw = load_hardware("h100-sxm");
  CHECK(static_cast<std::int64_t>(build_training_step(m, p, hw.gpus_per_node).ops.size()) <=
        estimated_step_ops(m, p, hw.gpus_per_node));
  p.fold_dp = false;
  p.fold_tp = false;
  // Unfolded: tp x pp x cp x dp = 16 built ranks: 16 x 8 x 2 x 64 = 16384.
  CHECK(estimated_step_ops(m, p, 8) == 16384);
  CHECK(static_cast<std::int64_t>(build_training_step(m, p, hw.gpus_per_node).ops.size()) <= 16384);
}

TEST_CASE("training step: ZB-H1 is no slower than 1F1B for the same work (pure pipeline)") {
  // Same forward, input-gradient and weight-gradient work; ZB-H1's bubble (p-1)(F+B-W) is at most
  // 1F1B's (p-1)(F+B+W) (Qi et al. 2023, Sec. 3). With tp = cp = 1 the Program has several
  // hardware queues, where the deferred W's keep the compute stream busy while the gradient
  // sends wait for a kernel boundary: the sends must not wait for the W backlog.
  const HardwareProfile hw = *builtin_hardware("a100-sxm");
  for (int pp : {4, 8}) {
    CAPTURE(pp);
    StepPlan p = plan_of(1, pp, 1, 1, 3 * pp);
    const Nanos one_f_one_b = step_time(tiny(pp), p, hw);
    p.schedule = PipelineSchedule::zb_h1;
    CHECK(step_time(tiny(pp), p, hw) <= one_f_one_b);
  }
}
