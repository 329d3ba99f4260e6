#include <doctest/doctest.h>

#include <string>

#include "schedules/memory_model.hpp"
#include "schedules/training_step.hpp"
#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/run.hpp"
#include "tests/schedules/tiny_models.hpp"
#include "tests/schedules/tiny_moe.hpp"

using namespace meshsim;

namespace {

StepPlan fsdp_plan(int pp, int dp, std::int64_t gbs) {
  StepPlan p;
  p.pp = pp;
  p.dp = dp;
  p.global_batch = gbs;
  p.distributed_optimizer = true;
  p.sharding.zero = 3;
  p.sharding.fsdp = true;
  return p;
}

struct OpCount {
  int gathers = 0, reduce_scatters = 0, all_reduces = 0, recompute_gemms = 0;
};

OpCount count_rank(const Program& prog, int rank) {
  OpCount c;
  for (const Op& op : prog.ops) {
    if (op.rank != rank) continue;
    const auto* coll = std::get_if<CollectiveCall>(&op.body);
    if (op.name.rfind("fsdp all-gather", 0) == 0) ++c.gathers;
    if (coll && coll->kind == CollectiveKind::reduce_scatter) ++c.reduce_scatters;
    if (op.name.rfind("hsdp grad all-reduce", 0) == 0) ++c.all_reduces;
    const auto* k = std::get_if<KernelCall>(&op.body);
    if (k && k->kind == KernelKind::gemm && op.name.rfind("recompute ", 0) == 0)
      ++c.recompute_gemms;
  }
  return c;
}

using test::step_time;

}  // namespace

TEST_CASE("step sharding: FSDP all-gathers each unit before forward and backward") {
  // L layers, pp 1: units = embedding + L layers + head = L + 2. Per microbatch: one all-gather
  // per unit in the forward and again in the backward (resharded after forward), one gradient
  // reduce-scatter per unit; m = gbs / (dp x mbs) = 8 / 4 = 2 microbatches.
  const TransformerModel m = test::tiny_gqa_model(3);
  const HardwareProfile hw = load_hardware("h100-sxm");
  StepPlan p = fsdp_plan(1, 4, 8);
  const int units = 3 + 2, micro = 2;
  OpCount c = count_rank(build_training_step(m, p, hw.gpus_per_node), 0);
  CHECK(c.gathers == 2 * units * micro);
  CHECK(c.reduce_scatters == units * micro);
  CHECK(c.all_reduces == 0);
  // --no-reshard-after-forward: no backward all-gathers.
  p.sharding.reshard_after_forward = false;
  c = count_rank(build_training_step(m, p, hw.gpus_per_node), 0);
  CHECK(c.gathers == units * micro);
  // HSDP 2: each unit's reduce-scatter is followed by an all-reduce over the 2 replicas.
  p.sharding.replicate = 2;
  c = count_rank(build_training_step(m, p, hw.gpus_per_node), 0);
  CHECK(c.all_reduces == units * micro);
}

TEST_CASE("step sharding: FSDP's no_sync gathers and reduces once per step") {
  // torch.distributed.pipelining drives FSDP2 stages with set_reshard_after_backward(False) and
  // set_requires_gradient_sync(False) on every backward and one reduction after the last
  // (--fsdp-no-sync): on a stage of 2 layers (rank 0: embedding + 2 layers = 3 units) each unit is
  // all-gathered by the first forward and its gradient reduce-scattered once, whatever the
  // microbatch count (m = 16 / (2 x 1) = 8). FSDP2's defaults sync every microbatch.
  const TransformerModel m = test::tiny_gqa_model(4);
  const HardwareProfile hw = load_hardware("h100-sxm");
  StepPlan p = fsdp_plan(2, 2, 16);
  const int units = 1 + 2, micro = 8;
  OpCount c = count_rank(build_training_step(m, p, hw.gpus_per_node), 0);
  CHECK(c.gathers == 2 * units * micro);
  CHECK(c.reduce_scatters == units * micro);
  p.sharding.no_sync = true;
  c = count_rank(build_training_step(m, p, hw.gpus_per_node), 0);
  CHECK(c.gathers == units);
  CHECK(c.reduce_scatters == units);
  // Without pipeline stages too (gradient accumulation over m = 16 / 4 = 4 microbatches): the
  // 4 layers' + embedding's + head's 6 units once each.
  StepPlan one = fsdp_plan(1, 4, 16);
  one.sharding.no_sync = true;
  c = count_rank(build_training_step(m, one, hw.gpus_per_node), 0);
  CHECK(c.gathers == 6);
  CHECK(c.reduce_scatters == 6);
  // Memory: the stage's parameters stay gathered (bf16) and their gradients accumulate in fp32
  // for the step (tests/schedules/test_sharding.cpp has the formula); syncing every microbatch
  // holds two units and one unit's gradient buffers instead.
  const StageMemory st = estimate_memory(m, memory_plan(p), hw).stages[0];
  const double params = static_cast<double>(st.parameters);
  // P x (2 + 4) + the largest unit x 2, the largest unit being at most P.
  CHECK(st.unsharded >= params * 6);
  CHECK(st.unsharded <= params * 8);
  p.sharding.no_sync = false;
  CHECK(st.unsharded > estimate_memory(m, memory_plan(p), hw).stages[0].unsharded);
}

TEST_CASE("step sharding: folded and unfolded FSDP / HSDP steps take the same time") {
  // As for the other DP reductions (ARCHITECTURE.md §4.4): the analytical network has no
  // contention, so the folded replica's collectives timed as the whole group give the unfolded
  // step time exactly.
  const TransformerModel m = test::tiny_gqa_model(2);
  HardwareProfile hw = load_hardware("h100-sxm");
  hw.gpus_per_node = 2;  // dp and pp cross nodes
  for (int replicate : {1, 2}) {
    for (int pp : {1, 2}) {
      CAPTURE(replicate);
      CAPTURE(pp);
      StepPlan p = fsdp_plan(pp, 4, 8);
      p.sharding.replicate = replicate;
      const Nanos folded = step_time(m, p, hw);
      p.fold_dp = false;
      CHECK(step_time(m, p, hw) == folded);
      CHECK(folded > 0);
    }
  }
}

TEST_CASE("step sharding: an MoE layer's routed experts are their own FSDP unit over edp") {
  // torchtitan's apply_fsdp: fully_shard(block.moe.experts, mesh=dp_mod_ep) before
  // fully_shard(block). tiny_moe(3): layer 0 dense, layers 1 and 2 MoE with 8 experts; ep 2 over
  // dp 4 leaves edp = 4 / 2 = 2 and 4 local experts per rank. m = 8 / 4 = 2 microbatches.
  const TransformerModel m = test::tiny_moe(3);
  const HardwareProfile hw = load_hardware("h100-sxm");
  StepPlan p = fsdp_plan(1, 4, 8);
  p.moe.ep = 2;
  const ParameterCount pc = count_parameters(m);
  const std::int64_t experts = 4 * pc.routed_expert;  // per MoE layer on a rank
  // The MoE layer's own unit: attention, router (h x 8) and norms; no dense MLP.
  const std::int64_t block = pc.attention + m.hidden * 8 + pc.norms;
  const Program prog = build_training_step(m, p, hw.gpus_per_node);
  int expert_gathers = 0, expert_reductions = 0, megatron_expert_reductions = 0, block_gathers = 0;
  for (const Op& op : prog.ops) {
    if (op.rank != 0) continue;
    const auto* coll = std::get_if<CollectiveCall>(&op.body);
    if (coll == nullptr) continue;
    const std::string& dim = prog.groups[static_cast<std::size_t>(coll->group)].dim;
    if (op.name.rfind("fsdp expert all-gather", 0) == 0) {
      ++expert_gathers;
      CHECK(dim == "edp");
      CHECK(coll->bytes == experts * 2);  // bf16
    } else if (op.name.rfind("fsdp expert grad reduce-scatter", 0) == 0) {
      ++expert_reductions;
      CHECK(dim == "edp");
      CHECK(coll->bytes == experts * 4);  // fp32 gradients
    } else if (op.name.rfind("expert grad", 0) == 0) {
      ++megatron_expert_reductions;
    } else if (op.name.rfind("fsdp all-gather c0 unit 2", 0) == 0) {  // layer 1 (unit 0: embedding)
      ++block_gathers;
      CHECK(coll->bytes == block * 2);
    }
  }
  // 2 MoE layers x (forward + backward) x 2 microbatches; one reduction per layer and microbatch.
  CHECK(expert_gathers == 2 * 2 * 2);
  CHECK(expert_reductions == 2 * 2);
  CHECK(megatron_expert_reductions == 0);
  CHECK(block_gathers == 2 * 2);
  // Folded as the dense units are: the same step time unfolded.
  const Nanos folded = step_time(m, p, hw);
  p.fold_dp = false;
  CHECK(step_time(m, p, hw) == folded);
  // Memory: FSDP2's 4 + 4 + 8 bytes per parameter, the experts' over edp = 2, the rest over 4.
  const MemoryEstimate est = estimate_memory(m, memory_plan(p), hw);
  const StageMemory& st = est.stages.at(0);
  const double dense = static_cast<double>(st.parameters - st.expert_parameters);
  const double routed = static_cast<double>(st.expert_parameters);
  CHECK(routed == static_cast<double>(2 * experts));
  CHECK(st.weights == doctest::Approx(4 * dense / 4 + 4 * routed / 2));
  CHECK(st.gradients == doctest::Approx(4 * dense / 4 + 4 * routed / 2));
  CHECK(st.optimizer == doctest::Approx(8 * dense / 4 + 8 * routed / 2));
  // ZeRO-2 (Megatron's 2 + 4 + 12 bytes): gradients and optimizer state over edp for the experts.
  p.sharding = ShardingPlan{};
  p.sharding.zero = 2;
  const StageMemory z2 = estimate_memory(m, memory_plan(p), hw).stages.at(0);
  CHECK(z2.weights == doctest::Approx(2 * (dense + routed)));
  CHECK(z2.gradients == doctest::Approx(4 * dense / 4 + 4 * routed / 2));
  CHECK(z2.optimizer == doctest::Approx(12 * dense / 4 + 12 * routed / 2));
}

TEST_CASE("step sharding: FSDP gathers ep-1 experts with their layer; HSDP with EP is refused") {
  // torchtitan wraps the experts on their own only when ep_degree > 1.
  const TransformerModel m = test::tiny_moe(3);
  const HardwareProfile hw = load_hardware("h100-sxm");
  StepPlan p = fsdp_plan(1, 4, 8);
  const ParameterCount pc = count_parameters(m);
  const std::int64_t layer = pc.attention + m.hidden * 8 + pc.norms + 8 * pc.routed_expert;
  int expert_ops = 0, layer_gathers = 0;
  const Program prog = build_training_step(m, p, hw.gpus_per_node);
  for (const Op& op : prog.ops) {
    if (op.rank != 0) continue;
    if (op.name.rfind("fsdp expert", 0) == 0) ++expert_ops;
    if (op.name.rfind("fsdp all-gather c0 unit 2", 0) == 0) {
      ++layer_gathers;
      CHECK(std::get<CollectiveCall>(op.body).bytes == layer * 2);
    }
  }
  CHECK(expert_ops == 0);
  CHECK(layer_gathers == 2 * 2);
  p.moe.ep = 2;
  p.sharding.replicate = 2;
  CHECK_THROWS_WITH_AS(build_training_step(m, p, hw.gpus_per_node),
                       doctest::Contains("`hsdp` 2 with an MoE model at `ep` 2 is not modelled"),
                       InputError);
}

TEST_CASE("step sharding: ZeRO-2 reduce-scatters every microbatch, ZeRO-1 once") {
  // dp_buckets 1 and one chunk: one gradient bucket; ZeRO-1 reduces it once per step, ZeRO-2
  // once per microbatch (m = 8 / 2 = 4).
  const TransformerModel m = test::tiny_gqa_model(2);
  const HardwareProfile hw = load_hardware("h100-sxm");
  StepPlan p;
  p.dp = 2;
  p.global_batch = 8;
  p.dp_buckets = 1;
  p.distributed_optimizer = true;
  p.sharding.zero = 1;
  CHECK(count_rank(build_training_step(m, p, hw.gpus_per_node), 0).reduce_scatters == 1);
  p.sharding.zero = 2;
  CHECK(count_rank(build_training_step(m, p, hw.gpus_per_node), 0).reduce_scatters == 4);
}

TEST_CASE("step sharding: selective-op recomputes every other matmul") {
  // SwiGLU: wq wk wv wo w1 w3 w2, the 2nd, 4th and 6th (wk, wo, w3) recomputed: 3 GEMMs per
  // layer and microbatch; 2 layers, m = 2.
  const TransformerModel m = test::tiny_gqa_model(2);
  const HardwareProfile hw = load_hardware("h100-sxm");
  StepPlan p;
  p.global_batch = 2;
  p.recompute = Recompute::selective_op;
  CHECK(count_rank(build_training_step(m, p, hw.gpus_per_node), 0).recompute_gemms == 3 * 2 * 2);
}
