#include "schedules/step_plan.hpp"

#include <algorithm>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "schedules/tp_emitter.hpp"
#include "sim/error.hpp"
#include "sim/size_math.hpp"

namespace meshsim {

std::int64_t step_seq(const TransformerModel& m, const StepPlan& p) {
  return p.seq > 0 ? p.seq : m.seq_len;
}

namespace {

// The most layers a pipeline rank holds: ceil(L / pp) by the rule, or what the layout gives
// (a layout that does not fit is refused later by check_memory_plan).
std::int64_t max_layers_per_rank(const TransformerModel& model, const StepPlan& plan) {
  std::int64_t most = (model.layers + plan.pp - 1) / plan.pp;
  const LayerLayout& l = plan.layout;
  for (const auto& given :
       {l.decoder_first_pipeline_num_layers, l.decoder_last_pipeline_num_layers}) {
    if (given) most = std::max<std::int64_t>(most, *given);
  }
  const PipelineShape shape = step_shape(plan);
  const int chunks = shape.stages > 0 ? chunks_of(shape) : 1;
  if (std::ssize(l.layers_per_stage) == std::int64_t{plan.pp} * chunks) {
    for (int r = 0; r < plan.pp; ++r) {
      std::int64_t n = 0;
      for (int c = 0; c < chunks; ++c) {
        n += l.layers_per_stage[static_cast<std::size_t>(global_stage(shape, r, c))];
      }
      most = std::max(most, n);
    }
  }
  return most;
}

// --overlap-moe-comm and --delay-wgrad-compute. On dualpipev, DeepSeek's DualPipe pairs; on
// Megatron's schedules, Megatron-Core's combined 1F1B, refused where TransformerConfig's
// __post_init__ refuses it (megatron/core/transformer/transformer_config.py, "if
// self.overlap_moe_expert_parallel_comm:"): a pipeline without virtual stages, ep 1, the
// allgather dispatcher, full recompute, micro-batch-level checkpoints (schedules.py: "not
// supported when overlap_moe_expert_parallel_comm is true"), other than bf16/fp16, more than one
// MTP layer; delay_wgrad_compute only with the overlap.
void check_moe_overlap(const TransformerModel& model, const StepPlan& plan) {
  const MoePlan& moe = plan.moe;
  // Megatron-Core's MoEFlexTokenDispatcher: "Flex token dispatcher requires TPxEP > 1".
  if (model.moe && moe.dispatcher == TokenDispatcher::flex &&
      moe.ep * expert_tp(moe, plan.tp) == 1) {
    throw InputError(
        "`moe_token_dispatcher` flex needs etp x ep > 1 (Megatron-Core's flex dispatcher runs "
        "DeepEP over the expert TP x EP group)");
  }
  // TransformerConfig.__post_init__: "moe_shared_expert_overlap only works with alltoall token
  // dispatcher", and only where there are shared experts to overlap.
  if (moe.shared_expert_overlap) {
    if (!model.moe || model.moe->shared_experts == 0) {
      throw InputError("`moe_shared_expert_overlap` needs a model with shared experts");
    }
    if (moe.dispatcher != TokenDispatcher::alltoall) {
      throw InputError(fmt::format(
          "`moe_shared_expert_overlap` needs `moe_token_dispatcher` alltoall (Megatron-Core "
          "overlaps shared experts with that dispatcher only), got {}",
          to_string(moe.dispatcher)));
    }
  }
  if (moe.delay_wgrad && !moe.overlap_comm) {
    throw InputError(
        "`delay_wgrad_compute` needs `overlap_moe_comm`: Megatron-Core splits the expert weight "
        "gradients off only for its all-to-all overlap");
  }
  if (!moe.overlap_comm) return;
  if (!model.moe) throw InputError("`overlap_moe_comm` needs a model with MoE layers");
  if (plan.schedule == PipelineSchedule::dualpipev) {
    if (moe.delay_wgrad) {
      throw InputError(
          "`delay_wgrad_compute` belongs to Megatron's combined 1F1B (`schedule` 1f1b or "
          "interleaved): dualpipev already defers each overlapped backward's weight gradients");
    }
    return;
  }
  const auto refuse = [](std::string_view why) {
    throw InputError(fmt::format(
        "`overlap_moe_comm` on a Megatron schedule is Megatron-Core's combined 1F1B, which {}",
        why));
  };
  const bool no_pipeline = plan.schedule == PipelineSchedule::one_f_one_b && plan.pp == 1;
  if (plan.schedule != PipelineSchedule::interleaved && !no_pipeline) {
    refuse(fmt::format(
        "runs with `schedule` 1f1b and `pp` 1 or with `schedule` interleaved (got {}, pp {}: "
        "with a pipeline Megatron asks for virtual stages); or use `schedule` dualpipev",
        to_string(plan.schedule), plan.pp));
  }
  if (moe.ep < 2) refuse("needs `ep` > 1 (it overlaps the expert-parallel all-to-all)");
  if (moe.dispatcher == TokenDispatcher::allgather) {
    refuse("needs `moe_token_dispatcher` alltoall or flex, not allgather");
  }
  if (plan.recompute == Recompute::full) {
    refuse("refuses full recompute (a whole-layer checkpoint cannot be split at the all-to-alls)");
  }
  if (plan.num_microbatches_with_partial_activation_checkpoints) {
    refuse("refuses `num_microbatches_with_partial_activation_checkpoints`");
  }
  if (plan.dtype != DType::bf16 && plan.dtype != DType::fp16) refuse("needs bf16 or fp16");
  if (model.mtp_layers > 1) refuse("takes at most one MTP layer");
}

}  // namespace

// Size estimate: built ranks x microbatches x layers per rank x ops per layer (an upper bound
// for the usual plans; the guard and the builder's reserve use it).
std::int64_t estimated_ops(const TransformerModel& model, const StepPlan& plan, bool tp_folded) {
  const std::int64_t built_tp = tp_folded ? 1 : plan.tp, built_dp = plan.fold_dp ? 1 : plan.dp;
  // Residual adds and their backward: 8 (2 forward, up to 4 backward, 2 when recomputed). A
  // materialized attention core adds its GEMMs and score kernels (3 forward, 5 backward, 3 more
  // when recomputed).
  // Low-precision linears add up to 6 casts and amax passes per linear forward and backward, and
  // as many again when recomputed (48).
  // TP communication overlap: per ring-exchanged all-gather 2 tp ops instead of 2 (four forward,
  // two more when recomputed, two backward), per pipelined reduce-scatter 8 instead of 2 (12 tp).
  const std::int64_t per_layer = 48 + 8 * std::int64_t{plan.cp} +
                                 (plan.attention == AttentionCore::materialized ? 12 : 0) +
                                 (plan.precision != Precision::bf16 ? 48 : 0) +
                                 (plan.tp_comm_overlap ? 12 * std::int64_t{plan.tp} + 24 : 0);
  // The last rank also runs the MTP modules (schedules/step_mtp.cpp), a layer each.
  const std::int64_t layers_per_rank = max_layers_per_rank(model, plan) + model.mtp_layers;
  // An MoE layer adds: router, top-k, aux loss, permutes, up to 8 dispatcher collectives forward
  // and backward, 6 GEMMs per local expert (up, down; dgrad, wgrad of each), shared experts.
  const std::int64_t moe_ops =
      model.moe ? 40 + 6 * (model.moe->experts / std::max(plan.moe.ep, 1)) : 0;
  // Saturates: a product past int64 is over any guard's limit anyway.
  return checked_product({built_tp, plan.pp, plan.cp, built_dp, microbatches(plan),
                          std::max<std::int64_t>(layers_per_rank, 1), per_layer + moe_ops})
      .value_or(std::numeric_limits<std::int64_t>::max());
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
  s.group_size = p.microbatch_group_size;
  // --overlap-moe-comm on Megatron's schedules is its combined 1F1B; DualPipeV pairs by itself.
  s.combined_1f1b = p.moe.overlap_comm && p.schedule != PipelineSchedule::dualpipev;
  return s;
}

bool folds_tp(const StepPlan& plan, int gpus_per_node) {
  return plan.fold_tp && plan.tp > 1 && gpus_per_node > 0 &&
         (gpus_per_node % plan.tp == 0 || plan.tp % gpus_per_node == 0);
}

bool moe_folds(const StepPlan& plan, int gpus_per_node) {
  if (plan.moe.ep * expert_tp(plan.moe, plan.tp) == 1 || gpus_per_node <= 0) return true;
  return expert_groups_fold_evenly(plan.tp, plan.cp, plan.dp, plan.pp, expert_tp(plan.moe, plan.tp),
                                   plan.moe.ep, gpus_per_node);
}

int world_size(const StepPlan& plan) {
  return plan.tp * plan.pp * plan.cp * plan.dp;
}

int microbatches(const StepPlan& plan) {
  const std::int64_t per = std::int64_t{plan.dp} * plan.microbatch_size;
  if (per <= 0 || plan.global_batch <= 0) return 0;
  return static_cast<int>(plan.global_batch / per);
}

CrossEntropy default_cross_entropy(Recompute recompute) {
  // torchtitan computes its loss as F.cross_entropy on fp32-upcast logits
  // (torchtitan/components/loss.py), eager or compiled; selective-op is its activation
  // checkpointing's "op" mode (memory_model.hpp), which no other stack meshsim models runs.
  return recompute == Recompute::selective_op ? CrossEntropy::torch_fp32
                                              : CrossEntropy::vocab_parallel;
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
  m.combined_1f1b = step_shape(plan).combined_1f1b;
  m.group_size = plan.microbatch_group_size;
  m.microbatch_size = plan.microbatch_size;
  m.seq = plan.seq;
  m.sequence_parallel = plan.sequence_parallel;
  m.recompute = plan.recompute;
  m.distributed_optimizer = plan.distributed_optimizer;
  m.fp8_param_gather = plan.fp8_param_gather;
  m.grad_bytes = plan.grad_reduce_in_fp32 ? 4.0 : static_cast<double>(dtype_bytes(plan.dtype));
  m.sharding = plan.sharding;
  m.kv_rotation = plan.kv_rotation;
  m.attention_core = plan.attention;
  m.cross_entropy = plan.cross_entropy;
  m.layer_kernels = plan.layer_kernels;
  m.precision = plan.precision;
  m.layout = plan.layout;
  m.whole_microbatches = plan.num_microbatches_with_partial_activation_checkpoints;
  m.ep = plan.moe.ep;
  m.etp = plan.moe.etp;
  return m;
}

namespace {

// The mesh and batch sizes: positive, bounded (so products stay far from int64 overflow).
void check_step_sizes(const StepPlan& plan) {
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
}

}  // namespace

void check_step_plan(const TransformerModel& model, const StepPlan& plan) {
  check_step_sizes(plan);
  const std::int64_t per = std::int64_t{plan.dp} * plan.microbatch_size;
  if (plan.global_batch % per != 0) {
    throw InputError(fmt::format(
        "`gbs` {} must be divisible by `dp` x `mbs` = {}: every data-parallel rank runs gbs / (dp "
        "x mbs) whole microbatches",
        plan.global_batch, per));
  }
  check_sharding(plan.sharding, plan.dp);
  if (model.moe && plan.moe.ep > 1 && plan.sharding.replicate > 1) {
    throw InputError(fmt::format(
        "`hsdp` {} with an MoE model at `ep` {} is not modelled: torchtitan shards the routed "
        "experts within each replica (its dp_replicate x dp_shard_mod_ep mesh) and all-reduces "
        "them across the replicas; use `fsdp`",
        plan.sharding.replicate, plan.moe.ep));
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
  if (plan.num_microbatches_with_partial_activation_checkpoints) {
    if (*plan.num_microbatches_with_partial_activation_checkpoints < 0) {
      throw InputError(
          fmt::format("`num_microbatches_with_partial_activation_checkpoints` must be at least 0 "
                      "(got {})",
                      *plan.num_microbatches_with_partial_activation_checkpoints));
    }
    if (plan.recompute == Recompute::none) {
      throw InputError(
          "`num_microbatches_with_partial_activation_checkpoints` needs `recompute` selective or "
          "full: it chooses which microbatches skip the recompute");
    }
  }
  if (plan.microbatch_group_size != 0 && plan.schedule != PipelineSchedule::interleaved) {
    throw InputError(fmt::format(
        "`group_size` {} needs `schedule` interleaved: only the interleaved schedule runs groups "
        "of consecutive microbatches per chunk",
        plan.microbatch_group_size));
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
  check_moe_plan(model, plan.moe, plan.tp, plan.cp, plan.dp, plan.sequence_parallel);
  check_tp_comm_overlap(plan, seq);
  if (plan.fp8_param_gather) {
    if (plan.precision != Precision::fp8_delayed && plan.precision != Precision::fp8_current) {
      throw InputError(fmt::format(
          "`fp8_param_gather` needs per-tensor FP8 linears (fp8-delayed or fp8-current), got "
          "`precision` {}",
          to_string(plan.precision)));
    }
    if (!plan.distributed_optimizer || plan.sharding.zero >= 2) {
      throw InputError(
          "`fp8_param_gather` is modelled with the distributed optimizer (its parameter "
          "all-gather in FP8), without ZeRO-2/3 or FSDP");
    }
    if (model.moe) {
      throw InputError("`fp8_param_gather` is not modelled for MoE models");
    }
  }
  if (!plan.grad_reduce_in_fp32 && plan.sharding.zero >= 2) {
    throw InputError(
        "`grad_reduce_in_fp32` false applies to Megatron-Core's DDP gradient buffer (no sharding, "
        "or the distributed optimizer); ZeRO-2/3 and FSDP reduce their own gradient shards");
  }
  check_moe_overlap(model, plan);
  check_memory_plan(model, memory_plan(plan));
  check_pipeline_shape(step_shape(plan));
  // Size guard; TP folding assumed (build_training_step re-checks when it cannot fold).
  check_step_size(model, plan, plan.fold_tp && plan.tp > 1);
}

std::string_view to_string(TpOverlapRs method) {
  return method == TpOverlapRs::pipeline ? "pipeline" : "ring-exchange";
}

std::optional<TpOverlapRs> parse_tp_overlap_rs(std::string_view name) {
  if (name == "pipeline") return TpOverlapRs::pipeline;
  if (name == "ring-exchange") return TpOverlapRs::ring_exchange;
  return std::nullopt;
}

void check_tp_comm_overlap(const StepPlan& plan, std::int64_t seq) {
  if (!plan.tp_comm_overlap) {
    if (plan.tp_overlap_rs != TpOverlapRs::pipeline) {
      throw InputError("`tp_overlap_rs` ring-exchange needs `tp_comm_overlap`");
    }
    return;
  }
  if (plan.tp < 2 || !plan.sequence_parallel) {
    throw InputError(fmt::format(
        "`tp_comm_overlap` needs `tp` > 1 with sequence parallelism (got tp {}{}): Transformer "
        "Engine's userbuffers overlap replaces the sequence-parallel all-gathers and "
        "reduce-scatters",
        plan.tp, plan.sequence_parallel ? "" : ", sequence parallelism off"));
  }
  // Transformer Engine runs userbuffers overlap with per-tensor FP8 scaling only (TE >= 2.2,
  // module/linear.py: NotImplementedError unless the recipe's float8_per_tensor_scaling(), i.e.
  // DelayedScaling or Float8CurrentScaling).
  if (plan.precision != Precision::bf16 && plan.precision != Precision::fp8_delayed &&
      plan.precision != Precision::fp8_current) {
    throw InputError(fmt::format(
        "`tp_comm_overlap` runs bf16, fp8-delayed or fp8-current linears (Transformer Engine's "
        "userbuffers overlap takes per-tensor FP8 scaling only), got `precision` {}",
        to_string(plan.precision)));
  }
  if (plan.tp_overlap_rs == TpOverlapRs::ring_exchange && plan.gpu_sms <= 1) {
    throw InputError(fmt::format(
        "`tp_overlap_rs` ring-exchange needs the GPU's SM count (`gpu_sms` > 1), got {}",
        plan.gpu_sms));
  }
  if (plan.gpu_sms <= kTpOverlapCommSms) {
    throw InputError(fmt::format(
        "`tp_comm_overlap` needs the GPU's SM count (`gpu_sms` > {}, the SMs Transformer Engine's "
        "communication kernels take), got {}",
        kTpOverlapCommSms, plan.gpu_sms));
  }
  const std::int64_t tokens = plan.microbatch_size * (seq / plan.cp);
  if (tokens % kTpOverlapSplits != 0) {
    throw InputError(fmt::format(
        "`tp_comm_overlap`: the {} tokens of a microbatch (mbs x seq / cp) must be divisible by "
        "the {} chunks of Transformer Engine's pipelined reduce-scatter",
        tokens, kTpOverlapSplits));
  }
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

namespace meshsim {

std::vector<std::vector<bool>> kept_whole(const StepPlan& plan) {
  const PipelineShape shape = step_shape(plan);
  const std::size_t v = static_cast<std::size_t>(chunks_of(shape));
  const std::size_t m = static_cast<std::size_t>(shape.microbatches);
  const auto& n = plan.num_microbatches_with_partial_activation_checkpoints;
  std::vector<std::vector<bool>> whole(static_cast<std::size_t>(plan.pp),
                                       std::vector<bool>(m * v, plan.recompute == Recompute::none));
  if (plan.recompute == Recompute::none || !n) return whole;
  const auto orders = pipeline_orders(shape);
  for (int r = 0; r < plan.pp; ++r) {
    const int window = std::max(1, warmup_forwards(shape, r));
    int k = 0;
    for (const PipeAction& a : orders[static_cast<std::size_t>(r)]) {
      if (a.work != PipeWork::forward && a.work != PipeWork::forward_backward) continue;
      whole[static_cast<std::size_t>(r)][static_cast<std::size_t>(a.microbatch) * v +
                                         static_cast<std::size_t>(a.chunk)] = k % window < *n;
      ++k;
    }
  }
  return whole;
}

int fitting_whole_microbatches(const TransformerModel& model, const StepPlan& plan,
                               const HardwareProfile& hardware) {
  const PipelineShape shape = step_shape(plan);
  int widest = 0;
  for (int r = 0; r < plan.pp; ++r) widest = std::max(widest, warmup_forwards(shape, r));
  StepPlan p = plan;
  for (int n = widest; n > 0; --n) {
    p.num_microbatches_with_partial_activation_checkpoints = n;
    if (!estimate_memory(model, memory_plan(p), hardware).oom) return n;
  }
  return 0;
}

}  // namespace meshsim
