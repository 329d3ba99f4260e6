#include "schedules/step_plan.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {

std::int64_t step_seq(const TransformerModel& m, const StepPlan& p) {
  return p.seq > 0 ? p.seq : m.seq_len;
}

// Size estimate: built ranks x microbatches x layers per rank x ops per layer (an upper bound
// for the usual plans; the guard and the builder's reserve use it).
std::int64_t estimated_ops(const TransformerModel& model, const StepPlan& plan, bool tp_folded) {
  const std::int64_t built =
      std::int64_t{tp_folded ? 1 : plan.tp} * plan.pp * plan.cp * (plan.fold_dp ? 1 : plan.dp);
  // Residual adds and their backward: 8 (2 forward, up to 4 backward, 2 when recomputed). A
  // materialized attention core adds its GEMMs and score kernels (3 forward, 5 backward, 3 more
  // when recomputed).
  const std::int64_t per_layer =
      48 + 8 * std::int64_t{plan.cp} + (plan.attention == AttentionCore::materialized ? 12 : 0);
  const std::int64_t layers_per_rank = (model.layers + plan.pp - 1) / plan.pp;
  return built * microbatches(plan) * std::max<std::int64_t>(layers_per_rank, 1) * per_layer;
}

void check_step_size(const TransformerModel& model, const StepPlan& plan, bool tp_folded) {
  const std::int64_t ops = estimated_ops(model, plan, tp_folded);
  if (ops > kMaxStepOps) {
    const bool unfolded = !plan.fold_dp || !tp_folded;
    throw InputError(fmt::format(
        "the step would have about {} million ops ({}pp x cp{} x microbatches x layers / pp x ops "
        "per layer), over the {} million this simulator builds; use fewer microbatches{}",
        ops >> 20, tp_folded ? "" : "tp x ", plan.fold_dp ? "" : " x dp", kMaxStepOps >> 20,
        unfolded ? " or fold the data- and tensor-parallel ranks" : ""));
  }
}

PipelineShape step_shape(const StepPlan& p) {
  PipelineShape s;
  s.schedule = p.schedule;
  s.stages = p.pp;
  s.microbatches = microbatches(p);
  s.chunks = p.vp;
  return s;
}

bool folds_tp(const StepPlan& plan, int gpus_per_node) {
  return plan.fold_tp && plan.tp > 1 && gpus_per_node > 0 &&
         (gpus_per_node % plan.tp == 0 || plan.tp % gpus_per_node == 0);
}

int world_size(const StepPlan& plan) {
  return plan.tp * plan.pp * plan.cp * plan.dp;
}

int microbatches(const StepPlan& plan) {
  const std::int64_t per = std::int64_t{plan.dp} * plan.microbatch_size;
  if (per <= 0 || plan.global_batch <= 0) return 0;
  return static_cast<int>(plan.global_batch / per);
}

MemoryPlan memory_plan(const StepPlan& plan) {
  MemoryPlan m;
  m.tp = plan.tp;
  m.pp = plan.pp;
  m.cp = plan.cp;
  m.dp = plan.dp;
  m.schedule = plan.schedule;
  m.vp = plan.vp;
  m.microbatches = std::max(1, microbatches(plan));
  m.microbatch_size = plan.microbatch_size;
  m.seq = plan.seq;
  m.sequence_parallel = plan.sequence_parallel;
  m.recompute = plan.recompute;
  m.distributed_optimizer = plan.distributed_optimizer;
  m.kv_rotation = plan.kv_rotation;
  m.attention_core = plan.attention;
  return m;
}

void check_step_plan(const TransformerModel& model, const StepPlan& plan) {
  require_positive(plan.tp, "tp");
  require_positive(plan.pp, "pp");
  require_positive(plan.cp, "cp");
  require_positive(plan.dp, "dp");
  require_positive(plan.vp, "vp");
  require_positive(plan.microbatch_size, "mbs");
  require_positive(plan.global_batch, "gbs");
  require_positive(plan.dp_buckets, "dp_buckets");
  if (plan.seq < 0) require_positive(plan.seq, "seq");
  constexpr int kMaxDim = 1 << 16;
  for (const auto& [v, flag] : {std::pair{plan.tp, "`tp`"}, std::pair{plan.pp, "`pp`"},
                                std::pair{plan.cp, "`cp`"}, std::pair{plan.dp, "`dp`"}}) {
    if (v > kMaxDim)
      throw InputError(fmt::format("{} must be at most {}, got {}", flag, kMaxDim, v));
  }
  // Sequences per microbatch and per step, bounded so dp x mbs and the token counts stay far
  // from int64 overflow.
  constexpr std::int64_t kMaxSequences = std::int64_t{1} << 30;
  for (const auto& [v, name] :
       {std::pair{plan.microbatch_size, "`mbs`"}, std::pair{plan.global_batch, "`gbs`"}}) {
    if (v > kMaxSequences) {
      throw InputError(
          fmt::format("{} must be at most {} sequences, got {}", name, kMaxSequences, v));
    }
  }
  if (std::int64_t{plan.tp} * plan.pp * plan.cp * plan.dp > (1 << 20)) {
    throw InputError("world size = `tp` x `pp` x `cp` x `dp` must be at most 1048576 GPUs");
  }
  const std::int64_t per = std::int64_t{plan.dp} * plan.microbatch_size;
  if (plan.global_batch % per != 0) {
    throw InputError(fmt::format(
        "`gbs` {} must be divisible by `dp` x `mbs` = {}: every data-parallel rank runs gbs / (dp "
        "x mbs) whole microbatches",
        plan.global_batch, per));
  }
  if (plan.overlap_param_gather && !plan.distributed_optimizer) {
    throw InputError(
        "`overlap_param_gather` needs `distributed_optimizer`: only the distributed optimizer "
        "all-gathers the updated parameters");
  }
  if (plan.vp > 1 && plan.schedule != PipelineSchedule::interleaved) {
    throw InputError(fmt::format(
        "`vp` {} needs `schedule` interleaved (zb-v and dualpipev always use 2 chunks, the other "
        "schedules 1)",
        plan.vp));
  }
  if (plan.attention == AttentionCore::materialized && plan.cp > 1) {
    throw InputError(fmt::format(
        "`attention` materialized needs `cp` 1, got {}: the context-parallel ring computes "
        "attention blockwise (flash)",
        plan.cp));
  }
  const std::int64_t seq = step_seq(model, plan);
  if (plan.cp > 1 && plan.cp_variant == RingVariant::zigzag && seq % (2 * plan.cp) != 0) {
    throw InputError(fmt::format(
        "`seq` {} must be divisible by 2 x `cp` = {} with `cp_variant` zigzag (each rank holds two "
        "half chunks)",
        seq, 2 * plan.cp));
  }
  check_memory_plan(model, memory_plan(plan));
  check_pipeline_shape(step_shape(plan));
  // Size guard; TP folding assumed (build_training_step re-checks when it cannot fold).
  check_step_size(model, plan, plan.fold_tp && plan.tp > 1);
}

std::int64_t estimated_step_ops(const TransformerModel& model, const StepPlan& plan,
                                int gpus_per_node) {
  return estimated_ops(model, plan, folds_tp(plan, gpus_per_node));
}

StepWork step_work(const TransformerModel& model, const StepPlan& plan) {
  const std::int64_t seq = step_seq(model, plan);
  return StepWork{static_cast<double>(plan.global_batch * seq),
                  training_flops_per_token(model, seq), world_size(plan),
                  training_flops_per_token(model, seq, AttentionFlops::full)};
}

}  // namespace meshsim
