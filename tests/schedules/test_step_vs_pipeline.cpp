// `meshsim step` (build_training_step) and `meshsim pipeline` (build_pipeline) run the same
// pipeline orders through the same emitter (schedules/pipeline_emitter): given the same time for
// every F, B and W, the two Programs must take the same time. A step whose warm-up activation
// sends waited for the whole warm-up (issue 16: step's zb-h1 at pp 32 twice as slow as 1F1B while
// pipeline was right) fails here.
#include <doctest/doctest.h>

#include <map>
#include <tuple>
#include <utility>

#include "schedules/pipeline.hpp"
#include "schedules/training_step.hpp"
#include "sim/comm_plan.hpp"
#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/run.hpp"

using namespace meshsim;

namespace {

// Times per action in ns (whole microbatch through one rank's share), and per p2p transfer.
struct ActionTimes {
  Nanos f = 0, b = 0, w = 0, p2p = 0;
};

// A GPT-like model with one layer per pipeline rank: h 64, 4 heads, f 256, V 256, seq 32.
TransformerModel small_model(int layers) {
  TransformerModel m;
  m.name = "small";
  m.layers = layers;
  m.hidden = 64;
  m.heads = 4;
  m.kv_heads = 4;
  m.ffn_hidden = 256;
  m.vocab = 256;
  m.seq_len = 32;
  return m;
}

bool splits_backward(PipelineSchedule s) {
  return s == PipelineSchedule::zb_h1 || s == PipelineSchedule::zb_h2;
}

// Times the step's ops so that each pipeline action takes exactly its ActionTimes value: the
// first forward op of (rank, microbatch) carries F, the first backward op B (B + W when the
// schedule does not split the backward), the last weight-gradient op W (it follows the
// microbatch's B, whose own trailing weight-gradient kernel — the embedding gradient on stage 0 —
// comes before it); every other kernel and collective takes 0, every p2p exchange `p2p`. Equal
// per-action times by construction, wherever the cost model would have put the time.
void time_step(Program& prog, ActionTimes t, bool split) {
  std::map<std::pair<int, int>, bool> seen_f, seen_b;
  std::map<std::pair<int, int>, std::size_t> last_w;
  for (std::size_t i = 0; i < prog.ops.size(); ++i) {
    Op& op = prog.ops[i];
    if (std::holds_alternative<P2PCall>(op.body)) {
      op.fixed_ns = t.p2p;
      continue;
    }
    op.fixed_ns = 0;
    if (!std::holds_alternative<KernelCall>(op.body)) continue;
    const std::pair<int, int> key{op.rank, op.labels.microbatch};
    if (op.labels.phase == Phase::fwd && !seen_f[key]) {
      seen_f[key] = true;
      op.fixed_ns = t.f;
    } else if (op.labels.phase == Phase::bwd && !seen_b[key]) {
      seen_b[key] = true;
      op.fixed_ns = split ? t.b : t.b + t.w;
    } else if (op.labels.phase == Phase::wgrad) {
      last_w[key] = i;
    }
  }
  if (split) {
    for (const auto& [key, i] : last_w) prog.ops[i].fixed_ns = t.w;
  }
}

struct Makespans {
  Nanos step = 0, pipeline = 0;
};

// Both builders for pp ranks, m microbatches, on one single_queue setting.
Makespans both(PipelineSchedule s, int pp, int m, ActionTimes t, bool single_queue) {
  HardwareProfile hw = *builtin_hardware("a100-sxm");
  // The actions take exactly the given times: no slow-down of compute beside a p2p kernel (the
  // bubble formulas below assume none; a100-sxm's comm_interference is 1.189).
  hw.comm_interference = 1.0;
  StepPlan plan;
  plan.pp = pp;
  plan.global_batch = m;
  plan.schedule = s;
  Program step = build_training_step(small_model(pp), plan, hw.gpus_per_node);
  step.single_queue = single_queue;
  time_step(step, t, splits_backward(s));

  PipelineConfig c;
  c.shape = PipelineShape{s, pp, m, 1, 0};
  c.time_f = ns_to_seconds(t.f);
  c.time_b = ns_to_seconds(t.b);
  c.time_w = ns_to_seconds(t.w);
  c.p2p_time = ns_to_seconds(t.p2p);
  c.single_queue = single_queue;
  c.gpus_per_node = hw.gpus_per_node;
  return {run_simulation(std::move(step), hw).metrics.makespan,
          run_simulation(build_pipeline(c), hw).metrics.makespan};
}

}  // namespace

TEST_CASE("step and pipeline agree for the same F, B, W times: 1F1B (control), ZB-H1, ZB-H2") {
  // Same orders, same exchanges, same per-action and per-transfer times: under the single
  // hardware queue (CUDA_DEVICE_MAX_CONNECTIONS=1, the pipeline's default and the step's when
  // tp > 1 or cp > 1) the makespans are equal to the nanosecond. Tolerance 0: nothing but the
  // ops' times differs, those are equal by construction, and the step's extra ops (optimizer
  // included) take 0. (With several hardware queues a send waits for the next compute kernel
  // boundary, ARCHITECTURE.md §2 rule 4, and a pipeline action is one kernel where a step action
  // is many: the Programs then differ by construction; see the pp 32 case below.)
  for (const PipelineSchedule s :
       {PipelineSchedule::one_f_one_b, PipelineSchedule::zb_h1, PipelineSchedule::zb_h2}) {
    for (const int pp : {2, 4, 8}) {
      for (const int m : {pp, 2 * pp, 3 * pp}) {
        for (const ActionTimes t :
             {ActionTimes{1000, 1000, 1000, 0}, ActionTimes{1200, 1500, 600, 100}}) {
          CAPTURE(to_string(s));
          CAPTURE(pp);
          CAPTURE(m);
          CAPTURE(t.w);
          const Makespans got = both(s, pp, m, t, true);
          CHECK(got.step == got.pipeline);
        }
      }
    }
  }
}

TEST_CASE("step at pp 32: ZB-H1 is faster than 1F1B by the paper's bubble difference") {
  // Free p2p, F = B = W = 1 us, p = 32, m = 64: 1F1B (m+p-1)(F+B+W) = 95 x 3 = 285 us; ZB-H1
  // m(F+B+W) + (p-1)(F+B-W) = 192 + 31 = 223 us (Qi et al. 2024, Sec. 3; ARCHITECTURE.md §4.2).
  // The bug of issue 16 made the step's ZB-H1 about twice 1F1B's time.
  const ActionTimes t{1000, 1000, 1000, 0};
  const Makespans one_f_one_b = both(PipelineSchedule::one_f_one_b, 32, 64, t, true);
  const Makespans zb_h1 = both(PipelineSchedule::zb_h1, 32, 64, t, true);
  CHECK(one_f_one_b.step == 285000);
  CHECK(zb_h1.step == 223000);
  CHECK(zb_h1.step == zb_h1.pipeline);
  // Several hardware queues (the step with tp = cp = 1): a send that becomes ready together with
  // a compute kernel waits for that kernel's end (§2 rule 4). Here rank 0's first activation
  // send, ready as its second forward (one kernel of F) starts, waits one F; every other send
  // finds its device waiting for input. The whole pipeline shifts by one F = 1 us, nothing else.
  CHECK(both(PipelineSchedule::one_f_one_b, 32, 64, t, false).step == 285000 + 1000);
  CHECK(both(PipelineSchedule::zb_h1, 32, 64, t, false).step == 223000 + 1000);
  // ZB-H2 at the same times: m(F+B+W) + (p-1)F = 192 + 31 = 223 us as well (zero per-rank bubble,
  // the last rank starting 31 F late; test_pipeline_zb_h2.cpp), in the step as in pipeline.
  const Makespans zb_h2 = both(PipelineSchedule::zb_h2, 32, 64, t, true);
  CHECK(zb_h2.step == 223000);
  CHECK(zb_h2.step == zb_h2.pipeline);
}

TEST_CASE("step and pipeline agree on the interleaved schedule for every microbatch group size") {
  // --microbatch-group-size in step means pipeline's --group-size (Megatron's microbatch group
  // per virtual stage): the same orders, so under the single hardware queue with the same time
  // per (microbatch, chunk) action — F/v forward, (B+W)/v backward, the pipeline builder's
  // per-chunk times — the makespans are equal to the nanosecond. One layer per chunk. Every g from
  // p to m runs (both builders share schedules/pipeline_emitter, which receives a message in the
  // exchange that matches its send).
  const HardwareProfile hw = *builtin_hardware("a100-sxm");
  for (const auto& [pp_, v_, m] :
       {std::tuple{2, 2, 8}, std::tuple{4, 2, 12}, std::tuple{4, 3, 16}}) {
    const int pp = pp_, v = v_;
    for (int g = pp; g <= m; ++g) {
      const int last = m % g;
      if (last != 0 && last < pp) continue;  // Megatron's rule: m mod g = 0 or >= p
      CAPTURE(pp);
      CAPTURE(v);
      CAPTURE(g);
      const ActionTimes t{1200 * v, 1500 * v, 600 * v, 100};
      StepPlan plan;
      plan.pp = pp;
      plan.vp = v;
      plan.global_batch = m;
      plan.schedule = PipelineSchedule::interleaved;
      plan.microbatch_group_size = g;
      Program step = build_training_step(small_model(pp * v), plan, hw.gpus_per_node);
      step.single_queue = true;
      // The first forward / backward kernel of each (rank, microbatch, chunk) carries its time.
      std::map<std::tuple<int, int, int>, bool> seen_f, seen_b;
      for (Op& op : step.ops) {
        op.fixed_ns = std::holds_alternative<P2PCall>(op.body) ? t.p2p : 0;
        if (!std::holds_alternative<KernelCall>(op.body)) continue;
        const std::tuple<int, int, int> key{op.rank, op.labels.microbatch, op.labels.chunk};
        if (op.labels.phase == Phase::fwd && !seen_f[key]) {
          seen_f[key] = true;
          op.fixed_ns = t.f / v;
        } else if (op.labels.phase == Phase::bwd && !seen_b[key]) {
          seen_b[key] = true;
          op.fixed_ns = (t.b + t.w) / v;
        }
      }
      PipelineConfig c;
      c.shape = PipelineShape{PipelineSchedule::interleaved, pp, m, v, g};
      c.time_f = ns_to_seconds(t.f);
      c.time_b = ns_to_seconds(t.b);
      c.time_w = ns_to_seconds(t.w);
      c.p2p_time = ns_to_seconds(t.p2p);
      c.single_queue = true;
      c.gpus_per_node = hw.gpus_per_node;
      const Program pipe = build_pipeline(c);
      CHECK(run_simulation(std::move(step), hw).metrics.makespan ==
            run_simulation(pipe, hw).metrics.makespan);
    }
  }
}
