// Micro-batch-level activation recomputation (Korthikanti et al. 2022, Appendix C; Megatron-LM's
// --num-microbatches-with-partial-activation-checkpoints): which forwards keep all their
// activations, the memory that costs, and the recompute time it saves.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "schedules/memory_model.hpp"
#include "schedules/training_step.hpp"
#include "sim/comm_plan.hpp"
#include "sim/cost_model.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "tests/schedules/device_hardware.hpp"
#include "tests/schedules/tiny_models.hpp"

using namespace meshsim;

namespace {

TransformerModel tiny(int layers) {
  return test::tiny_gqa_model(layers);
}

StepPlan plan_of(int tp, int pp, std::int64_t m, Recompute r, std::optional<int> whole) {
  StepPlan p;
  p.tp = tp;
  p.pp = pp;
  p.global_batch = m;
  p.recompute = r;
  p.num_microbatches_with_partial_activation_checkpoints = whole;
  return p;
}

// Every kernel 1 us, communication free.
Nanos unit_makespan(const Program& prog) {
  const HardwareProfile hw = testing::device_hardware();
  const CommPlan plan = validate_program(prog);
  Durations d = estimate_durations(prog, plan, hw);
  for (std::size_t i = 0; i < prog.ops.size(); ++i) d.ops[i] = prog.ops[i].is_compute() ? 1000 : 0;
  for (auto& t : d.transfers) t = 0;
  for (auto& c : d.collectives) c = 0;
  d.comm_interference = 1.0;
  return simulate(prog, plan, d).makespan;
}

std::vector<bool> whole_of(const std::vector<int>& microbatches, int m) {
  std::vector<bool> out(static_cast<std::size_t>(m), false);
  for (int k : microbatches) out[static_cast<std::size_t>(k)] = true;
  return out;
}

}  // namespace

TEST_CASE("micro-batch-level recompute: the moving window per pipeline rank (1F1B, p 4, m 8)") {
  // Window W_r = p - r outstanding backward passes (the paper's max(0, p - S); Megatron's
  // max_outstanding_backprops), forwards in microbatch order: with N = 1, forward k keeps all
  // activations iff k mod W_r < 1.
  const auto whole = kept_whole(plan_of(1, 4, 8, Recompute::selective, 1));
  CHECK(whole[0] == whole_of({0, 4}, 8));         // W 4
  CHECK(whole[1] == whole_of({0, 3, 6}, 8));      // W 3
  CHECK(whole[2] == whole_of({0, 2, 4, 6}, 8));   // W 2
  CHECK(whole[3] == std::vector<bool>(8, true));  // W 1: "later stages need no recomputation"
  // N = 2: k mod 4 < 2 on rank 0.
  CHECK(kept_whole(plan_of(1, 4, 8, Recompute::full, 2))[0] == whole_of({0, 1, 4, 5}, 8));
  // Unset: every microbatch recomputes; recompute none: every microbatch is whole.
  CHECK(kept_whole(plan_of(1, 4, 8, Recompute::selective, {}))[0] == std::vector<bool>(8, false));
  CHECK(kept_whole(plan_of(1, 4, 8, Recompute::none, {}))[0] == std::vector<bool>(8, true));
}

TEST_CASE("micro-batch-level recompute: in-flight memory") {
  // Rank r holds min(p - r, m) microbatches in flight; min(N, that) of them whole:
  // activations = w x (layer_none + extra) + (inflight - w) x (layer_stored + extra).
  const TransformerModel m = tiny(4);
  const HardwareProfile hw = testing::device_hardware();
  const StepPlan sp = plan_of(1, 4, 8, Recompute::full, 1);
  const MemoryPlan mp = memory_plan(sp);
  const ActivationTerms a = activation_terms(m, mp);
  const MemoryEstimate est = estimate_memory(m, mp, hw);
  // Rank 0: inflight 4, 1 whole; one layer and the embedding's extra.
  CHECK(est.stages[0].activations == doctest::Approx(1 * (a.layer_none + a.embedding_extra) +
                                                     3 * (a.layer_stored + a.embedding_extra)));
  CHECK(est.stages[0].recompute_working == a.layer_working);
  // Rank 3: inflight 1, whole: nothing recomputes there, no working layer.
  CHECK(est.stages[3].activations == doctest::Approx(a.layer_none + a.output_extra));
  CHECK(est.stages[3].recompute_working == 0);
  // The paper's choice: the largest N that fits. Unlimited memory: the widest window, 4; a
  // capacity of exactly the N = 1 peak: 1; below the N = 0 peak: 0.
  HardwareProfile big = hw;
  big.memory_bytes = 1e15;
  CHECK(fitting_whole_microbatches(m, sp, big) == 4);
  HardwareProfile fit1 = hw;
  fit1.memory_bytes = est.peak_bytes;
  CHECK(fitting_whole_microbatches(m, sp, fit1) == 1);
  HardwareProfile small = hw;
  small.memory_bytes = 1;
  CHECK(fitting_whole_microbatches(m, sp, small) == 0);
}

TEST_CASE("micro-batch-level recompute: step time with unit op times (tp 2, pp 1, m 4)") {
  // One rank, everything serial, every kernel 1 us: selective recompute adds one attention
  // forward per layer and recomputed microbatch (2 layers x 4 = 8 us), full recompute the
  // layer's 11 forward kernels (norm, qkv, RoPE, attention, proj, residual, norm, up, activation,
  // down, residual: 88 us). With pp 1 the window is 1 forward: N >= 1 keeps every
  // microbatch whole (the time of recompute none), N = 0 recomputes every one.
  const TransformerModel m = tiny(2);
  const int gpn = load_hardware("h100-sxm").gpus_per_node;
  const auto t = [&](Recompute r, std::optional<int> whole) {
    return unit_makespan(build_training_step(m, plan_of(2, 1, 4, r, whole), gpn));
  };
  const Nanos none = t(Recompute::none, {});
  CHECK(t(Recompute::selective, {}) - none == 8000);
  CHECK(t(Recompute::full, {}) - none == 88000);
  CHECK(t(Recompute::selective, 1) == none);
  CHECK(t(Recompute::full, 1) == none);
  CHECK(t(Recompute::selective, 0) - none == 8000);
}

TEST_CASE("micro-batch-level recompute: the recompute kernels follow the window (pp 4, m 8)") {
  // One layer per rank, N = 1: recomputed microbatches per rank 8 - 2, 8 - 3, 8 - 4, 0 (the
  // windows above) = 15 recomputed attention cores in all (selective: one kernel each, tp 2).
  const TransformerModel m = tiny(4);
  const Program prog = build_training_step(m, plan_of(2, 4, 8, Recompute::selective, 1),
                                           load_hardware("h100-sxm").gpus_per_node);
  int recomputed = 0;
  for (const Op& op : prog.ops) recomputed += op.name.starts_with("recompute ") ? 1 : 0;
  CHECK(recomputed == 15);
}

TEST_CASE("micro-batch-level recompute: plan rules") {
  const TransformerModel m = tiny(4);
  const auto message = [&](const StepPlan& p) {
    try {
      check_step_plan(m, p);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(message(plan_of(1, 1, 4, Recompute::none, 1)) ==
        "`num_microbatches_with_partial_activation_checkpoints` needs `recompute` selective or "
        "full: it chooses which microbatches skip the recompute");
  CHECK(message(plan_of(1, 1, 4, Recompute::full, -1)) ==
        "`num_microbatches_with_partial_activation_checkpoints` must be at least 0 (got -1)");
}
